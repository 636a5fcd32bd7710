// GGML block formats and their integer dot products, chosen at run time by what the CPU supports.
//
// Weights stay in GGML block formats: Q4_1 (32 weights: fp16 scale d, fp16 minimum m, 16 bytes of 4-bit values,
// x = d*q + m) and Q8_0 (32 weights: fp16 scale d, 32 int8 values, x = d*q). Before every product the activations
// are quantized to int8 blocks of 32 with a float scale (and, for Q4_1, the block's scaled sum), so a dot product is
// integer multiply-adds (AVX2 maddubs, or AVX-512 VNNI dpbusd where the CPU has it) plus one float multiply-add per
// block -- the same arithmetic as llama.cpp's CPU backend. A scalar version runs everywhere.
#pragma once
#include <torch/extension.h>
#include <ATen/Parallel.h>

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

namespace {

constexpr int64_t QK = 32;
// Q4_1x8, Q8_0x8: rows repacked 8 at a time (repacked.h), what the kernels keep of Q4_1 and Q8_0 rows that come in 8s
enum Format : int64_t { kQ4_1 = 1, kQ8_0 = 2, kQ4_1x8 = 3, kQ8_0x8 = 4 };

struct BlockQ4_1 { uint16_t d, m; uint8_t qs[16]; };  // qs[j]: weight j (low nibble), weight j + 16 (high)
struct BlockQ8_0 { uint16_t d; int8_t qs[32]; };
struct BlockQ8_1 { float d, s; int8_t qs[32]; };  // activations: s = d * sum(qs)
static_assert(sizeof(BlockQ4_1) == 20, "Q4_1 block");
static_assert(sizeof(BlockQ8_0) == 34, "Q8_0 block");

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  if (exponent == 0) {
    const float value = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -value : value;
  }
  const uint32_t bits = exponent == 31 ? (sign | 0x7f800000u | (mantissa << 13))
                                       : (sign | ((exponent + 112) << 23) | (mantissa << 13));
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

uint16_t float_to_half(float value) {  // round to nearest even; the scales are finite and in range
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const int32_t exponent = static_cast<int32_t>((bits >> 23) & 0xff) - 127 + 15;
  uint32_t mantissa = bits & 0x7fffffu;
  if (exponent <= 0) {  // subnormal half (or zero)
    if (exponent < -10) return static_cast<uint16_t>(sign);
    mantissa |= 0x800000u;
    const uint32_t shift = static_cast<uint32_t>(14 - exponent);
    uint32_t half = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1), midpoint = 1u << (shift - 1);
    if (rest > midpoint || (rest == midpoint && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  if (exponent >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  uint32_t half = (static_cast<uint32_t>(exponent) << 10) | (mantissa >> 13);
  const uint32_t rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1))) ++half;  // may carry into the exponent: still right
  return static_cast<uint16_t>(sign | half);
}

// ------------------------------------------------------------------------------------------------ dot products
// dot_rows: one weight row (nb blocks) against R activation rows, out[r] = sum over blocks.

template <int R>
void dot_q4_1_scalar(const BlockQ4_1* w, const BlockQ8_1* const* a, int64_t nb, float* out) {
  for (int r = 0; r < R; ++r) {
    float sum = 0.0f;
    for (int64_t b = 0; b < nb; ++b) {
      int32_t acc = 0;
      for (int j = 0; j < 16; ++j) acc += (w[b].qs[j] & 15) * a[r][b].qs[j] + (w[b].qs[j] >> 4) * a[r][b].qs[j + 16];
      sum += half_to_float(w[b].d) * a[r][b].d * static_cast<float>(acc) + half_to_float(w[b].m) * a[r][b].s;
    }
    out[r] = sum;
  }
}

template <int R>
void dot_q8_0_scalar(const BlockQ8_0* w, const BlockQ8_1* const* a, int64_t nb, float* out) {
  for (int r = 0; r < R; ++r) {
    float sum = 0.0f;
    for (int64_t b = 0; b < nb; ++b) {
      int32_t acc = 0;
      for (int j = 0; j < 32; ++j) acc += w[b].qs[j] * a[r][b].qs[j];
      sum += half_to_float(w[b].d) * a[r][b].d * static_cast<float>(acc);
    }
    out[r] = sum;
  }
}

__attribute__((target("avx2,fma,f16c"))) inline float hsum(__m256 x) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

// The AVX2 and the AVX-512 VNNI kernels differ only in the unsigned x signed byte product summed into int32 lanes.
#define AER_DOT_KERNELS(SUFFIX, TARGET, U8S8)                                                                    \
  template <int R>                                                                                               \
  __attribute__((target(TARGET))) inline void q4_1_block_##SUFFIX(const BlockQ4_1& w, const BlockQ8_1* const* a, \
                                                                 int64_t b, __m256* acc, __m128* mins) {         \
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w.qs));                                 \
    const __m256i qw = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(0x0F));  \
    const __m128 dm = _mm_cvtph_ps(_mm_cvtsi32_si128(*reinterpret_cast<const int32_t*>(&w.d))); /* d, m */       \
    for (int r = 0; r < R; ++r) {                                                                                \
      const __m256i qa = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[r][b].qs));                       \
      const __m256 p = _mm256_cvtepi32_ps(U8S8(qw, qa));                                                         \
      const __m128 scaled = _mm_mul_ps(dm, _mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(&a[r][b].d)))); \
      acc[r] = _mm256_fmadd_ps(_mm256_broadcastss_ps(scaled), p, acc[r]); /* d_w d_a * sum */                    \
      mins[r] = _mm_add_ps(mins[r], scaled); /* lane 1: m_w s_a */                                               \
    }                                                                                                            \
  }                                                                                                              \
  template <int R>                                                                                               \
  __attribute__((target(TARGET))) void dot_q4_1_##SUFFIX(const BlockQ4_1* w, const BlockQ8_1* const* a,         \
                                                         int64_t nb, float* out) {                              \
    /* two chains of multiply-adds (even and odd blocks): a block need not wait for the previous one */          \
    __m256 even[R], odd[R];                                                                                      \
    __m128 mins[R];                                                                                              \
    for (int r = 0; r < R; ++r) even[r] = odd[r] = _mm256_setzero_ps(), mins[r] = _mm_setzero_ps();             \
    int64_t b = 0;                                                                                               \
    for (; b + 2 <= nb; b += 2) {                                                                                \
      q4_1_block_##SUFFIX<R>(w[b], a, b, even, mins);                                                            \
      q4_1_block_##SUFFIX<R>(w[b + 1], a, b + 1, odd, mins);                                                     \
    }                                                                                                            \
    if (b < nb) q4_1_block_##SUFFIX<R>(w[b], a, b, even, mins);                                                  \
    for (int r = 0; r < R; ++r)                                                                                  \
      out[r] = hsum(_mm256_add_ps(even[r], odd[r])) + _mm_cvtss_f32(_mm_shuffle_ps(mins[r], mins[r], 1));        \
  }                                                                                                              \
  template <int R>                                                                                               \
  __attribute__((target(TARGET))) inline void q8_0_block_##SUFFIX(const BlockQ8_0& w, const BlockQ8_1* const* a, \
                                                                 int64_t b, __m256* acc) {                       \
    const __m256i qw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.qs));                               \
    const __m256i magnitude = _mm256_sign_epi8(qw, qw);                                                          \
    const float d = _cvtsh_ss(w.d);                                                                              \
    for (int r = 0; r < R; ++r) {                                                                                \
      const __m256i qa = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[r][b].qs));                       \
      const __m256 p = _mm256_cvtepi32_ps(U8S8(magnitude, _mm256_sign_epi8(qa, qw)));                            \
      acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(d * a[r][b].d), p, acc[r]);                                        \
    }                                                                                                            \
  }                                                                                                              \
  template <int R>                                                                                               \
  __attribute__((target(TARGET))) void dot_q8_0_##SUFFIX(const BlockQ8_0* w, const BlockQ8_1* const* a,         \
                                                         int64_t nb, float* out) {                              \
    __m256 even[R], odd[R];                                                                                      \
    for (int r = 0; r < R; ++r) even[r] = odd[r] = _mm256_setzero_ps();                                          \
    int64_t b = 0;                                                                                               \
    for (; b + 2 <= nb; b += 2) {                                                                                \
      q8_0_block_##SUFFIX<R>(w[b], a, b, even);                                                                  \
      q8_0_block_##SUFFIX<R>(w[b + 1], a, b + 1, odd);                                                           \
    }                                                                                                            \
    if (b < nb) q8_0_block_##SUFFIX<R>(w[b], a, b, even);                                                        \
    for (int r = 0; r < R; ++r) out[r] = hsum(_mm256_add_ps(even[r], odd[r]));                                   \
  }

#define AER_U8S8_AVX2(u, s) _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1))
#define AER_U8S8_VNNI(u, s) _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s)
AER_DOT_KERNELS(avx2, "avx2,fma,f16c", AER_U8S8_AVX2)
AER_DOT_KERNELS(vnni, "avx2,fma,f16c,avx512f,avx512vl,avx512vnni", AER_U8S8_VNNI)

enum class Isa { kScalar, kAvx2, kAvx512Vnni };

Isa detect_isa() {
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  if (avx2 && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni")) return Isa::kAvx512Vnni;
  return avx2 ? Isa::kAvx2 : Isa::kScalar;
}

Isa g_isa = detect_isa();

const char* isa_name(Isa isa) {
  return isa == Isa::kAvx512Vnni ? "avx512vnni" : isa == Isa::kAvx2 ? "avx2" : "scalar";
}

template <int R>
void dot_rows(int64_t format, const uint8_t* row, const BlockQ8_1* const* a, int64_t nb, float* out) {
  if (format == kQ4_1) {
    const auto* w = reinterpret_cast<const BlockQ4_1*>(row);
    if (g_isa == Isa::kAvx512Vnni) return dot_q4_1_vnni<R>(w, a, nb, out);
    if (g_isa == Isa::kAvx2) return dot_q4_1_avx2<R>(w, a, nb, out);
    return dot_q4_1_scalar<R>(w, a, nb, out);
  }
  const auto* w = reinterpret_cast<const BlockQ8_0*>(row);
  if (g_isa == Isa::kAvx512Vnni) return dot_q8_0_vnni<R>(w, a, nb, out);
  if (g_isa == Isa::kAvx2) return dot_q8_0_avx2<R>(w, a, nb, out);
  return dot_q8_0_scalar<R>(w, a, nb, out);
}

#include "repacked.h"

// ---------------------------------------------------------------------------------------------- quantization

int64_t block_bytes(int64_t format) { return format == kQ4_1 ? sizeof(BlockQ4_1) : sizeof(BlockQ8_0); }

void quantize_activations(const float* x, int64_t k, BlockQ8_1* out) {  // as ggml's quantize_row_q8_1
  for (int64_t b = 0; b < k / QK; ++b, x += QK) {
    float amax = 0.0f;
    for (int j = 0; j < QK; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    int32_t sum = 0;
    for (int j = 0; j < QK; ++j) {
      const int32_t q = static_cast<int32_t>(std::nearbyint(x[j] * id));
      out[b].qs[j] = static_cast<int8_t>(q);
      sum += q;
    }
    out[b].d = d;
    out[b].s = d * static_cast<float>(sum);
  }
}

struct Matrix {
  int64_t format = 0, rows = 0, cols = 0;
  torch::Tensor data;  // uint8 (rows, cols / 32 * block bytes), or repacked (rows / 8, cols / 32 * 8 * block bytes)
  const uint8_t* base = nullptr;  // data's bytes (data_ptr() checks the type on every call: too slow per row)

  const uint8_t* row(int64_t r) const { return base + r * (cols / QK) * block_bytes(format); }
  template <typename Group>
  const Group* group(int64_t g) const { return reinterpret_cast<const Group*>(base) + g * (cols / QK); }  // rows 8g..
};

// Raw blocks as GGML stores them; matrices whose rows come in eights are kept repacked (repacked.h).
Matrix make_matrix(torch::Tensor data, int64_t format, int64_t rows, int64_t cols) {
  TORCH_CHECK(format == kQ4_1 || format == kQ8_0, "unknown block format ", format);
  TORCH_CHECK(cols % QK == 0, "columns must be a multiple of 32, got ", cols);
  TORCH_CHECK(data.dtype() == torch::kUInt8 && data.is_contiguous() && data.device().is_cpu(), "raw blocks: uint8");
  TORCH_CHECK(data.numel() == rows * (cols / QK) * block_bytes(format), "raw blocks of the wrong size");
  if (rows % 8 == 0) {
    torch::Tensor packed = format == kQ4_1 ? repack<BlockQ4_1x8>(data.data_ptr<uint8_t>(), rows, cols / QK)
                                           : repack<BlockQ8_0x8>(data.data_ptr<uint8_t>(), rows, cols / QK);
    return Matrix{format == kQ4_1 ? kQ4_1x8 : kQ8_0x8, rows, cols, packed, packed.data_ptr<uint8_t>()};
  }
  return Matrix{format, rows, cols, data, data.data_ptr<uint8_t>()};
}

// matmul_rows for a repacked matrix: whole groups of 8 rows, of which rows begin..end-1 are written.
template <typename Group>
void matmul_groups(const Matrix& w, const BlockQ8_1* act, int64_t n, float* out, int64_t out_stride, int64_t begin,
                   int64_t end) {
  const int64_t nb = w.cols / QK;
  float results[4 * 8];
  for (int64_t g = begin / 8; g * 8 < end; ++g) {
    const int64_t first = std::max(begin, g * 8), last = std::min(end, g * 8 + 8);
    auto emit = [&](int64_t i, int count) {
      for (int j = 0; j < count; ++j)
        for (int64_t r = first; r < last; ++r) out[(i + j) * out_stride + r] = results[8 * j + (r - g * 8)];
    };
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
      const BlockQ8_1* rows[4] = {act + i * nb, act + (i + 1) * nb, act + (i + 2) * nb, act + (i + 3) * nb};
      dot8_rows<4>(w.group<Group>(g), rows, nb, results);
      emit(i, 4);
    }
    const BlockQ8_1* rows[3] = {act + i * nb, act + (i + 1) * nb, act + (i + 2) * nb};
    if (n - i == 3) dot8_rows<3>(w.group<Group>(g), rows, nb, results);
    if (n - i == 2) dot8_rows<2>(w.group<Group>(g), rows, nb, results);
    if (n - i == 1) dot8_rows<1>(w.group<Group>(g), rows, nb, results);
    emit(i, static_cast<int>(n - i));
  }
}

// out[i * out_stride + r] = row r of w . activations row i, for i < n and begin <= r < end (activations: n rows of
// cols / 32 blocks). The caller splits the rows over its threads.
void matmul_rows(const Matrix& w, const BlockQ8_1* act, int64_t n, float* out, int64_t out_stride, int64_t begin,
                 int64_t end) {
  if (w.format == kQ4_1x8) return matmul_groups<BlockQ4_1x8>(w, act, n, out, out_stride, begin, end);
  if (w.format == kQ8_0x8) return matmul_groups<BlockQ8_0x8>(w, act, n, out, out_stride, begin, end);
  const int64_t nb = w.cols / QK;
  for (int64_t r = begin; r < end; ++r) {
    const uint8_t* row = w.row(r);
    int64_t i = 0;
    float results[4];
    for (; i + 4 <= n; i += 4) {
      const BlockQ8_1* rows[4] = {act + i * nb, act + (i + 1) * nb, act + (i + 2) * nb, act + (i + 3) * nb};
      dot_rows<4>(w.format, row, rows, nb, results);
      for (int j = 0; j < 4; ++j) out[(i + j) * out_stride + r] = results[j];
    }
    for (; i < n; ++i) {
      const BlockQ8_1* rows[1] = {act + i * nb};
      dot_rows<1>(w.format, row, rows, nb, results);
      out[i * out_stride + r] = results[0];
    }
  }
}

// The same over every row, split over torch's threads (one call: `linear` below).
void matmul(const Matrix& w, const BlockQ8_1* act, int64_t n, float* out, int64_t out_stride) {
  at::parallel_for(0, w.rows, 16, [&](int64_t begin, int64_t end) {
    matmul_rows(w, act, n, out, out_stride, begin, end);
  });
}

void dequantize_row(const Matrix& w, int64_t r, float* out) {
  const int lane = static_cast<int>(r % 8);
  for (int64_t b = 0; b < w.cols / QK; ++b, out += QK) {
    if (w.format == kQ4_1 || w.format == kQ4_1x8) {
      const BlockQ4_1 block = w.format == kQ4_1x8 ? unpack_row(w.group<BlockQ4_1x8>(r / 8)[b], lane)
                                                  : reinterpret_cast<const BlockQ4_1*>(w.row(r))[b];
      const float d = half_to_float(block.d), m = half_to_float(block.m);
      for (int j = 0; j < 16; ++j) out[j] = d * (block.qs[j] & 15) + m, out[j + 16] = d * (block.qs[j] >> 4) + m;
    } else {
      const BlockQ8_0 block = w.format == kQ8_0x8 ? unpack_row(w.group<BlockQ8_0x8>(r / 8)[b], lane)
                                                  : reinterpret_cast<const BlockQ8_0*>(w.row(r))[b];
      const float d = half_to_float(block.d);
      for (int j = 0; j < QK; ++j) out[j] = d * block.qs[j];
    }
  }
}

// Float rows (rows, cols) -> raw blocks, as ggml's reference quantizers (quantize_row_q4_1_ref, _q8_0_ref).
torch::Tensor quantize(torch::Tensor weight, int64_t format) {
  TORCH_CHECK(weight.dim() == 2 && weight.size(1) % QK == 0, "quantize: a matrix with a multiple of 32 columns");
  TORCH_CHECK(format == kQ4_1 || format == kQ8_0, "unknown block format ", format);
  const torch::Tensor x = weight.to(torch::kFloat32).contiguous();
  const int64_t blocks = x.numel() / QK;
  torch::Tensor out = torch::empty({weight.size(0), weight.size(1) / QK * block_bytes(format)}, torch::kUInt8);
  const float* src = x.data_ptr<float>();
  uint8_t* dst = out.data_ptr<uint8_t>();
  at::parallel_for(0, blocks, 1024, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const float* v = src + b * QK;
      if (format == kQ4_1) {
        auto& block = reinterpret_cast<BlockQ4_1*>(dst)[b];
        float lo = v[0], hi = v[0];
        for (int j = 1; j < QK; ++j) lo = std::min(lo, v[j]), hi = std::max(hi, v[j]);
        const float d = (hi - lo) / 15.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        block.d = float_to_half(d);
        block.m = float_to_half(lo);
        for (int j = 0; j < 16; ++j) {
          const auto q0 = static_cast<uint8_t>(std::min(15.0f, (v[j] - lo) * id + 0.5f));
          const auto q1 = static_cast<uint8_t>(std::min(15.0f, (v[j + 16] - lo) * id + 0.5f));
          block.qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
        }
      } else {
        auto& block = reinterpret_cast<BlockQ8_0*>(dst)[b];
        float amax = 0.0f;
        for (int j = 0; j < QK; ++j) amax = std::max(amax, std::fabs(v[j]));
        const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        block.d = float_to_half(d);
        for (int j = 0; j < QK; ++j) block.qs[j] = static_cast<int8_t>(std::nearbyint(v[j] * id));
      }
    }
  });
  return out;
}

torch::Tensor dequantize(torch::Tensor data, int64_t format, int64_t rows, int64_t cols) {
  const Matrix w = make_matrix(data, format, rows, cols);
  torch::Tensor out = torch::empty({rows, cols}, torch::kFloat32);
  at::parallel_for(0, rows, 64, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) dequantize_row(w, r, out.data_ptr<float>() + r * cols);
  });
  return out;
}

// x (n, cols) float -> x W^T (n, rows), with x quantized to int8 blocks first (what every projection of a step does).
torch::Tensor linear(torch::Tensor data, int64_t format, int64_t rows, int64_t cols, torch::Tensor x) {
  const Matrix w = make_matrix(data, format, rows, cols);
  const torch::Tensor input = x.to(torch::kFloat32).contiguous().view({-1, cols});
  const int64_t n = input.size(0);
  std::vector<BlockQ8_1> act(n * cols / QK);
  for (int64_t i = 0; i < n; ++i) quantize_activations(input.data_ptr<float>() + i * cols, cols, &act[i * cols / QK]);
  torch::Tensor out = torch::empty({n, rows}, torch::kFloat32);
  matmul(w, act.data(), n, out.data_ptr<float>(), rows);
  return out;
}

}  // namespace
