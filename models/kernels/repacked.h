// Q4_1 and Q8_0 rows repacked eight at a time (ggml's "repacked" Q4_0 8x8 idea).
//
// Per group of 8 weight rows and per block of 32 columns: the 8 rows' scales (and Q4_1's minimums) side by side,
// then their values interleaved 4 bytes at a time, so that one 32-byte load holds 4 bytes of every row and one
// broadcast of 4 activation bytes multiplies all 8 rows. The integer sums of 8 rows come out in the 8 lanes of one
// register, and the float work is one multiply-add per block for 8 rows, where the plain layout does it per row;
// the weights are unpacked once per block for all the activation rows. Included by blocks.h, which defines the
// blocks, the kernel variant (g_isa) and the scalar products.
#pragma once

struct BlockQ4_1x8 {
  using Plain = BlockQ4_1;
  uint16_t d[8], m[8];  // row r's scale and minimum (fp16)
  uint8_t qs[128];      // qs[32 v + 4 r + i] = row r's qs[4 v + i]: its weights 4v+i (low nibble) and 16+4v+i (high)
};
static_assert(sizeof(BlockQ4_1x8) == 160, "eight Q4_1 blocks");

struct BlockQ8_0x8 {
  using Plain = BlockQ8_0;
  uint16_t d[8];    // row r's scale (fp16)
  int8_t qs[256];   // qs[32 v + 4 r + i] = row r's qs[4 v + i]
};
static_assert(sizeof(BlockQ8_0x8) == 272, "eight Q8_0 blocks");

// Raw rows (a multiple of 8) of Group's plain blocks -> groups of 8 rows, each nb repacked blocks.
template <typename Group>
torch::Tensor repack(const uint8_t* raw, int64_t rows, int64_t nb) {
  using Plain = typename Group::Plain;
  torch::Tensor out = torch::empty({rows / 8, nb * static_cast<int64_t>(sizeof(Group))}, torch::kUInt8);
  auto* groups = reinterpret_cast<Group*>(out.data_ptr<uint8_t>());
  const auto* blocks = reinterpret_cast<const Plain*>(raw);
  at::parallel_for(0, rows / 8, 16, [&](int64_t begin, int64_t end) {
    for (int64_t g = begin; g < end; ++g) {
      for (int64_t b = 0; b < nb; ++b) {
        Group& packed = groups[g * nb + b];
        for (int r = 0; r < 8; ++r) {
          const Plain& block = blocks[(g * 8 + r) * nb + b];
          packed.d[r] = block.d;
          if constexpr (std::is_same_v<Plain, BlockQ4_1>) packed.m[r] = block.m;
          for (size_t v = 0; v < sizeof(block.qs) / 4; ++v) {
            std::memcpy(&packed.qs[32 * v + 4 * r], &block.qs[4 * v], 4);
          }
        }
      }
    }
  });
  return out;
}

// Row r of a group's block as a plain block.
template <typename Group>
typename Group::Plain unpack_row(const Group& packed, int r) {
  typename Group::Plain block;
  block.d = packed.d[r];
  if constexpr (std::is_same_v<Group, BlockQ4_1x8>) block.m = packed.m[r];
  for (size_t v = 0; v < sizeof(block.qs) / 4; ++v) std::memcpy(&block.qs[4 * v], &packed.qs[32 * v + 4 * r], 4);
  return block;
}

// The scalar variant: each row of the group unpacked, then the plain layout's scalar product.
template <int R, typename Group>
void dot8_scalar(const Group* w, const BlockQ8_1* const* a, int64_t nb, float* out) {
  std::vector<typename Group::Plain> row(nb);
  float results[R];
  for (int lane = 0; lane < 8; ++lane) {
    for (int64_t b = 0; b < nb; ++b) row[b] = unpack_row(w[b], lane);
    if constexpr (std::is_same_v<Group, BlockQ4_1x8>) {
      dot_q4_1_scalar<R>(row.data(), a, nb, results);
    } else {
      dot_q8_0_scalar<R>(row.data(), a, nb, results);
    }
    for (int r = 0; r < R; ++r) out[8 * r + lane] = results[r];
  }
}

// out[8 i + lane] = row `lane` of the group . activation row i, for R activation rows. DOT4 adds the products of 4
// unsigned weight bytes and 4 signed activation bytes into each 32-bit lane's sum, FINISH widens the sums to int32.
#define AER_Q4_1X8_KERNEL(SUFFIX, TARGET, DOT4, FINISH)                                                          \
  template <int R>                                                                                               \
  __attribute__((target(TARGET))) void dot8_q4_1_##SUFFIX(const BlockQ4_1x8* w, const BlockQ8_1* const* a,      \
                                                          int64_t nb, float* out) {                             \
    const __m256i nibbles = _mm256_set1_epi8(0x0F);                                                              \
    __m256 acc[R];                                                                                               \
    for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();                                                    \
    for (int64_t b = 0; b < nb; ++b) {                                                                           \
      const BlockQ4_1x8& block = w[b];                                                                           \
      __m256i sums[R];                                                                                           \
      for (int r = 0; r < R; ++r) sums[r] = _mm256_setzero_si256();                                              \
      for (int v = 0; v < 4; ++v) {                                                                              \
        const __m256i packed = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.qs + 32 * v));          \
        const __m256i low = _mm256_and_si256(packed, nibbles);                     /* weights 4v..4v+3 */        \
        const __m256i high = _mm256_and_si256(_mm256_srli_epi16(packed, 4), nibbles); /* 16+4v..16+4v+3 */       \
        for (int r = 0; r < R; ++r) {                                                                            \
          int32_t first, second;                                                                                 \
          std::memcpy(&first, a[r][b].qs + 4 * v, 4);                                                            \
          std::memcpy(&second, a[r][b].qs + 16 + 4 * v, 4);                                                      \
          sums[r] = DOT4(sums[r], low, _mm256_set1_epi32(first));                                                \
          sums[r] = DOT4(sums[r], high, _mm256_set1_epi32(second));                                              \
        }                                                                                                        \
      }                                                                                                          \
      const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block.d)));              \
      const __m256 m = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block.m)));              \
      for (int r = 0; r < R; ++r) {                                                                              \
        const __m256 scale = _mm256_mul_ps(d, _mm256_set1_ps(a[r][b].d));                                        \
        acc[r] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(FINISH(sums[r])), acc[r]); /* d_w d_a sum */          \
        acc[r] = _mm256_fmadd_ps(m, _mm256_set1_ps(a[r][b].s), acc[r]);               /* m_w s_a */              \
      }                                                                                                          \
    }                                                                                                            \
    for (int r = 0; r < R; ++r) _mm256_storeu_ps(out + 8 * r, acc[r]);                                           \
  }

// AVX2: byte pairs into int16 (at most 2 * 15 * 127 each, 8 of them per block: no overflow), then pairs of those.
#define AER_DOT4_AVX2(sum, u, s) _mm256_add_epi16(sum, _mm256_maddubs_epi16(u, s))
#define AER_FINISH_AVX2(sum) _mm256_madd_epi16(sum, _mm256_set1_epi16(1))
#define AER_DOT4_VNNI(sum, u, s) _mm256_dpbusd_epi32(sum, u, s)
#define AER_FINISH_VNNI(sum) (sum)
AER_Q4_1X8_KERNEL(avx2, "avx2,fma,f16c", AER_DOT4_AVX2, AER_FINISH_AVX2)
AER_Q4_1X8_KERNEL(vnni, "avx2,fma,f16c,avx512f,avx512vl,avx512vnni", AER_DOT4_VNNI, AER_FINISH_VNNI)

template <int R>
void dot8_rows(const BlockQ4_1x8* w, const BlockQ8_1* const* a, int64_t nb, float* out) {
  if (g_isa == Isa::kAvx512Vnni) return dot8_q4_1_vnni<R>(w, a, nb, out);
  if (g_isa == Isa::kAvx2) return dot8_q4_1_avx2<R>(w, a, nb, out);
  dot8_scalar<R>(w, a, nb, out);
}

// Signed weights: their magnitudes times the activations carrying the weights' signs (maddubs and dpbusd multiply
// unsigned by signed bytes). A byte pair reaches 2 * 128 * 127, so AVX2 widens every product to int32 at once.
#define AER_Q8_0X8_KERNEL(SUFFIX, TARGET, DOT4)                                                                  \
  template <int R>                                                                                               \
  __attribute__((target(TARGET))) void dot8_q8_0_##SUFFIX(const BlockQ8_0x8* w, const BlockQ8_1* const* a,      \
                                                          int64_t nb, float* out) {                             \
    __m256 acc[R];                                                                                               \
    for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();                                                    \
    for (int64_t b = 0; b < nb; ++b) {                                                                           \
      const BlockQ8_0x8& block = w[b];                                                                           \
      __m256i sums[R];                                                                                           \
      for (int r = 0; r < R; ++r) sums[r] = _mm256_setzero_si256();                                              \
      for (int v = 0; v < 8; ++v) {                                                                              \
        const __m256i weights = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.qs + 32 * v));         \
        const __m256i magnitude = _mm256_sign_epi8(weights, weights);                                            \
        for (int r = 0; r < R; ++r) {                                                                            \
          int32_t four;                                                                                          \
          std::memcpy(&four, a[r][b].qs + 4 * v, 4);                                                             \
          sums[r] = DOT4(sums[r], magnitude, _mm256_sign_epi8(_mm256_set1_epi32(four), weights));                \
        }                                                                                                        \
      }                                                                                                          \
      const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block.d)));              \
      for (int r = 0; r < R; ++r)                                                                                \
        acc[r] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(a[r][b].d)), _mm256_cvtepi32_ps(sums[r]), acc[r]); \
    }                                                                                                            \
    for (int r = 0; r < R; ++r) _mm256_storeu_ps(out + 8 * r, acc[r]);                                           \
  }

#define AER_DOT4_WIDE_AVX2(sum, u, s) _mm256_add_epi32(sum, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), \
                                                                              _mm256_set1_epi16(1)))
AER_Q8_0X8_KERNEL(avx2, "avx2,fma,f16c", AER_DOT4_WIDE_AVX2)
AER_Q8_0X8_KERNEL(vnni, "avx2,fma,f16c,avx512f,avx512vl,avx512vnni", AER_DOT4_VNNI)

template <int R>
void dot8_rows(const BlockQ8_0x8* w, const BlockQ8_1* const* a, int64_t nb, float* out) {
  if (g_isa == Isa::kAvx512Vnni) return dot8_q8_0_vnni<R>(w, a, nb, out);
  if (g_isa == Isa::kAvx2) return dot8_q8_0_avx2<R>(w, a, nb, out);
  dot8_scalar<R>(w, a, nb, out);
}
