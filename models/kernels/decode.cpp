// The quantized decode step of models/model.py's transformer, in one C++ call per step.
//
// Weights in GGML blocks, products in integers (blocks.h).
//
// DecodeModel::step runs one decode step for n rows (one new token each, every row at its own position) through
// every layer: RMSNorm, QKV (+bias), rotate-half RoPE, the key/value write into the scheduler's cache, grouped-query
// attention over the row's slots 0..position, o-proj, residual, RMSNorm, gate/up, SiLU, down, residual; then the
// final norm and the LM head. Buffers are allocated once and reused; the whole step is one OpenMP parallel region
// (products and attention split over its threads, the cheap row-wise steps on one of them, barriers between).
#include "blocks.h"

#include <omp.h>

#include <atomic>
#include <thread>

namespace {

// Threads of one step wait for each other here by spinning (a step's phases last microseconds to a millisecond;
// sleeping and waking costs as much), yielding the core after a while in case a thread was descheduled.
struct SpinBarrier {
  int parties = 1;
  std::atomic<int> arrived{0};
  std::atomic<int> generation{0};

  void wait() {
    const int seen = generation.load(std::memory_order_acquire);
    if (arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == parties) {
      arrived.store(0, std::memory_order_relaxed);
      generation.fetch_add(1, std::memory_order_release);
      return;
    }
    for (int spins = 0; generation.load(std::memory_order_acquire) == seen; ++spins) {
      if (spins < 20000) {
        _mm_pause();
      } else {
        std::this_thread::yield();
      }
    }
  }
};

// ------------------------------------------------------------------------------------------------ the model

__attribute__((target("avx2,fma,f16c"))) float dot_avx2(const float* a, const float* b, int64_t n) {
  __m256 acc = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + j), _mm256_loadu_ps(b + j), acc);
  float sum = hsum(acc);
  for (; j < n; ++j) sum += a[j] * b[j];
  return sum;
}

__attribute__((target("avx2,fma,f16c"))) void axpy_avx2(float alpha, const float* x, float* y, int64_t n) {
  const __m256 a = _mm256_set1_ps(alpha);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) _mm256_storeu_ps(y + j, _mm256_fmadd_ps(a, _mm256_loadu_ps(x + j), _mm256_loadu_ps(y + j)));
  for (; j < n; ++j) y[j] += alpha * x[j];
}

float dot(const float* a, const float* b, int64_t n) {
  if (g_isa != Isa::kScalar) return dot_avx2(a, b, n);
  float sum = 0.0f;
  for (int64_t j = 0; j < n; ++j) sum += a[j] * b[j];
  return sum;
}

void axpy(float alpha, const float* x, float* y, int64_t n) {
  if (g_isa != Isa::kScalar) return axpy_avx2(alpha, x, y, n);
  for (int64_t j = 0; j < n; ++j) y[j] += alpha * x[j];
}

struct Layer {
  torch::Tensor attn_norm, mlp_norm, qkv_bias;  // qkv_bias: no elements when the model has none
  Matrix qkv, o, gate_up, down;
};

class DecodeModel {
 public:
  DecodeModel(std::vector<std::vector<torch::Tensor>> layer_tensors, std::vector<std::vector<int64_t>> layer_formats,
              torch::Tensor embed, int64_t embed_format, torch::Tensor lm_head, int64_t lm_head_format,
              torch::Tensor norm, torch::Tensor cos, torch::Tensor signed_sin, std::vector<int64_t> shape, double eps)
      : hidden_(shape[0]), inter_(shape[1]), heads_(shape[2]), kv_heads_(shape[3]), head_dim_(shape[4]),
        vocab_(shape[5]), eps_(static_cast<float>(eps)), norm_(norm.contiguous()), cos_(cos.contiguous()),
        sin_(signed_sin.contiguous()) {
    TORCH_CHECK(layer_tensors.size() == layer_formats.size(), "one format list per layer");
    const int64_t qkv_rows = (heads_ + 2 * kv_heads_) * head_dim_;
    for (size_t i = 0; i < layer_tensors.size(); ++i) {
      const auto& t = layer_tensors[i];
      const auto& f = layer_formats[i];
      TORCH_CHECK(t.size() == 7 && f.size() == 4, "a layer: 2 norms, bias, qkv, o, gate_up, down");
      layers_.push_back(Layer{t[0].contiguous(), t[1].contiguous(), t[2].contiguous(),
                              make_matrix(t[3], f[0], qkv_rows, hidden_),
                              make_matrix(t[4], f[1], hidden_, heads_ * head_dim_),
                              make_matrix(t[5], f[2], 2 * inter_, hidden_), make_matrix(t[6], f[3], hidden_, inter_)});
    }
    embed_ = make_matrix(embed, embed_format, vocab_, hidden_);
    // Tied embeddings: one repacked copy serves both.
    lm_head_ = lm_head.is_same(embed) ? embed_ : make_matrix(lm_head, lm_head_format, vocab_, hidden_);
  }

  void bind_cache(std::vector<torch::Tensor> keys, std::vector<torch::Tensor> values) {
    TORCH_CHECK(keys.size() == layers_.size() && values.size() == layers_.size(), "one cache buffer per layer");
    for (size_t i = 0; i < keys.size(); ++i) {
      for (const auto& buffer : {keys[i], values[i]}) {
        TORCH_CHECK(buffer.dtype() == torch::kFloat32 && buffer.dim() == 4 && buffer.stride(3) == 1 &&
                    buffer.size(1) == kv_heads_ && buffer.size(3) == head_dim_, "cache: float32 (B, KV, L, D)");
      }
    }
    keys_ = std::move(keys);
    values_ = std::move(values);
    rows_ = 0;  // the score buffer follows the cache length
  }

  // tokens (n,) int64, positions (n,) int64: row i's token goes to cache row i, slot positions[i]. Rows at or beyond
  // attend_len are the scheduler's idle rows: they are not computed at all (their logits are zeros), so a step costs
  // what its running rows cost, wherever their slots are. -> logits (n, V)
  torch::Tensor step(torch::Tensor tokens, torch::Tensor positions, int64_t attend_len) {
    TORCH_CHECK(!keys_.empty(), "bind_cache first");
    const int64_t n = tokens.numel();
    TORCH_CHECK(positions.numel() == n && n <= keys_[0].size(0), "one position per row, rows within the cache");
    const torch::Tensor tok = tokens.to(torch::kInt64).contiguous(), pos = positions.to(torch::kInt64).contiguous();
    const int64_t* token = tok.data_ptr<int64_t>();
    const int64_t* position = pos.data_ptr<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      TORCH_CHECK(token[i] >= 0 && token[i] < vocab_, "token id out of range");
      TORCH_CHECK(position[i] >= 0 && position[i] < keys_[0].size(2) && position[i] < cos_.size(0), "bad position");
    }
    std::vector<int64_t> rows, slots;  // the running rows: cache row and slot of compact row j
    for (int64_t i = 0; i < n; ++i) {
      if (position[i] < attend_len) rows.push_back(i), slots.push_back(position[i]);
    }
    // torch::empty, filled here: a torch fill or copy would wake torch's own thread team, a cost per step.
    torch::Tensor logits = torch::empty({n, vocab_}, torch::kFloat32);
    float* logits_out = logits.data_ptr<float>();
    if (rows.empty()) {
      std::fill(logits_out, logits_out + n * vocab_, 0.0f);
      return logits;
    }
    const int64_t m = static_cast<int64_t>(rows.size());
    reserve(m);
    // The LM head writes straight into the logits when every row runs, else into compact rows copied after.
    if (m != n) compact_.resize(m * vocab_);
    float* head_out = m == n ? logits_out : compact_.data();
    const int64_t qkv_width = (heads_ + 2 * kv_heads_) * head_dim_, q_width = heads_ * head_dim_;
    // One parallel region for the whole step, its phases separated by a spinning barrier. A region per product
    // (about 150 a step) and OpenMP's own barriers paid a wake-up of sleeping threads each time: a step took 9 ms
    // from the thread that loaded the model and 33 ms from any other (the scheduler's), because with a second
    // OpenMP team in the process libgomp spins only ~100 times before it sleeps.
    const int threads = std::max(1, at::get_num_threads());
    SpinBarrier barrier;
#pragma omp parallel num_threads(threads)
    {
      const int64_t part = omp_get_thread_num(), parts = omp_get_num_threads();
#pragma omp single
      barrier.parties = static_cast<int>(parts);  // the team as it started (implicit barrier after)
      auto split = [&](int64_t total, auto&& work) {  // this thread's share of [0, total), then wait for the rest
        work(total * part / parts, total * (part + 1) / parts);
        barrier.wait();
      };
      auto product = [&](const Matrix& w, float* out, int64_t out_stride) {
        split(w.rows, [&](int64_t begin, int64_t end) { matmul_rows(w, act_.data(), m, out, out_stride, begin, end); });
      };
      auto serial = [&](auto&& work) {  // the cheap row-wise steps: one thread, the others wait
        if (part == 0) work();
        barrier.wait();
      };
      serial([&] { for (int64_t j = 0; j < m; ++j) dequantize_row(embed_, token[rows[j]], &x_[j * hidden_]); });
      for (size_t l = 0; l < layers_.size(); ++l) {
        const Layer& layer = layers_[l];
        serial([&] { norm_and_quantize(layer.attn_norm, m, hidden_); });
        product(layer.qkv, qkv_.data(), qkv_width);
        serial([&] { write_cache(l, layer, m, rows.data(), slots.data(), qkv_width); });
        split(m * heads_, [&](int64_t begin, int64_t end) { attend(l, rows.data(), slots.data(), qkv_width, begin, end); });
        serial([&] { quantize_rows(att_.data(), m, q_width); });
        product(layer.o, tmp_.data(), hidden_);
        serial([&] {
          for (int64_t j = 0; j < m * hidden_; ++j) x_[j] += tmp_[j];
          norm_and_quantize(layer.mlp_norm, m, hidden_);
        });
        product(layer.gate_up, gate_up_.data(), 2 * inter_);
        serial([&] {
          for (int64_t i = 0; i < m; ++i) {
            const float* gate = &gate_up_[i * 2 * inter_];
            float* out = &mlp_[i * inter_];
            for (int64_t j = 0; j < inter_; ++j) out[j] = gate[j] / (1.0f + std::exp(-gate[j])) * gate[j + inter_];
          }
          quantize_rows(mlp_.data(), m, inter_);
        });
        product(layer.down, tmp_.data(), hidden_);
        serial([&] { for (int64_t j = 0; j < m * hidden_; ++j) x_[j] += tmp_[j]; });
      }
      serial([&] { norm_and_quantize(norm_, m, hidden_); });
      product(lm_head_, head_out, vocab_);
    }
    if (m == n) return logits;
    std::fill(logits_out, logits_out + n * vocab_, 0.0f);  // idle rows: zeros
    for (int64_t j = 0; j < m; ++j) {
      std::memcpy(logits_out + rows[j] * vocab_, head_out + j * vocab_, vocab_ * sizeof(float));
    }
    return logits;
  }

 private:
  void reserve(int64_t n) {
    if (n <= rows_) return;
    rows_ = n;
    x_.assign(n * hidden_, 0.0f);
    tmp_.assign(n * hidden_, 0.0f);
    normed_.assign(n * std::max(hidden_, inter_), 0.0f);
    qkv_.assign(n * (heads_ + 2 * kv_heads_) * head_dim_, 0.0f);
    att_.assign(n * heads_ * head_dim_, 0.0f);
    gate_up_.assign(n * 2 * inter_, 0.0f);
    mlp_.assign(n * inter_, 0.0f);
    act_.assign(n * std::max({hidden_, inter_, heads_ * head_dim_}) / QK, BlockQ8_1{});
    scores_.assign(n * heads_ * keys_[0].size(2), 0.0f);
  }

  void quantize_rows(const float* x, int64_t n, int64_t width) {
    for (int64_t i = 0; i < n; ++i) quantize_activations(x + i * width, width, &act_[i * width / QK]);
  }

  void norm_and_quantize(const torch::Tensor& weight, int64_t n, int64_t width) {
    const float* w = weight.data_ptr<float>();
    for (int64_t i = 0; i < n; ++i) {
      const float* x = &x_[i * width];
      float* out = &normed_[i * width];
      double squares = 0.0;
      for (int64_t j = 0; j < width; ++j) squares += static_cast<double>(x[j]) * x[j];
      const float scale = 1.0f / std::sqrt(static_cast<float>(squares / width) + eps_);
      for (int64_t j = 0; j < width; ++j) out[j] = w[j] * (x[j] * scale);
    }
    quantize_rows(normed_.data(), n, width);
  }

  void rotate(float* x, int64_t slot, float scale) const {  // rotate-half RoPE: x * cos + swap_halves(x) * signed_sin
    const int64_t half = head_dim_ / 2;
    const float* c = cos_.data_ptr<float>() + slot * head_dim_;
    const float* s = sin_.data_ptr<float>() + slot * head_dim_;
    for (int64_t j = 0; j < half; ++j) {
      const float a = x[j], b = x[j + half];
      x[j] = (a * c[j] + b * s[j]) * scale;
      x[j + half] = (b * c[j + half] + a * s[j + half]) * scale;
    }
  }

  // Compact row j: cache row rows[j], its new token at slot slots[j]: biases, rotary, and the token's key and value
  // into the cache.
  void write_cache(size_t l, const Layer& layer, int64_t n, const int64_t* rows, const int64_t* slots,
                   int64_t qkv_width) {
    const torch::Tensor& keys = keys_[l];
    const torch::Tensor& values = values_[l];
    float* k_base = keys.data_ptr<float>();
    float* v_base = values.data_ptr<float>();
    const int64_t k_row = keys.stride(0), k_head = keys.stride(1), k_slot = keys.stride(2);
    const int64_t v_row = values.stride(0), v_head = values.stride(1), v_slot = values.stride(2);
    const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim_));
    const int64_t kv_dims = kv_heads_ * head_dim_, q_dims = heads_ * head_dim_;
    for (int64_t i = 0; i < n; ++i) {
      float* q = &qkv_[i * qkv_width];
      if (layer.qkv_bias.numel() == qkv_width) {
        const float* bias = layer.qkv_bias.data_ptr<float>();
        for (int64_t j = 0; j < qkv_width; ++j) q[j] += bias[j];
      }
      for (int64_t h = 0; h < heads_; ++h) rotate(q + h * head_dim_, slots[i], scale);
      for (int64_t h = 0; h < kv_heads_; ++h) {
        float* k = q + q_dims + h * head_dim_;
        rotate(k, slots[i], 1.0f);
        std::memcpy(k_base + rows[i] * k_row + h * k_head + slots[i] * k_slot, k, head_dim_ * sizeof(float));
        std::memcpy(v_base + rows[i] * v_row + h * v_head + slots[i] * v_slot, q + q_dims + kv_dims + h * head_dim_,
                    head_dim_ * sizeof(float));
      }
    }
  }

  // Grouped-query attention of tasks [begin, end) (task = compact row x head) over the row's slots 0..slots[j].
  void attend(size_t l, const int64_t* rows, const int64_t* slots, int64_t qkv_width, int64_t begin, int64_t end) {
    const torch::Tensor& keys = keys_[l];
    const torch::Tensor& values = values_[l];
    const float* k_base = keys.data_ptr<float>();
    const float* v_base = values.data_ptr<float>();
    const int64_t k_row = keys.stride(0), k_head = keys.stride(1), k_slot = keys.stride(2);
    const int64_t v_row = values.stride(0), v_head = values.stride(1), v_slot = values.stride(2);
    const int64_t group = heads_ / kv_heads_, max_len = keys.size(2), q_dims = heads_ * head_dim_;
    for (int64_t task = begin; task < end; ++task) {
      const int64_t i = task / heads_, h = task % heads_, kv = h / group, length = slots[i] + 1;
      const float* q = &qkv_[i * qkv_width + h * head_dim_];
      const float* k = k_base + rows[i] * k_row + kv * k_head;
      const float* v = v_base + rows[i] * v_row + kv * v_head;
      float* out = &att_[i * q_dims + h * head_dim_];
      std::fill(out, out + head_dim_, 0.0f);
      float* scores = &scores_[task * max_len];
      float top = -INFINITY;
      for (int64_t t = 0; t < length; ++t) top = std::max(top, scores[t] = dot(q, k + t * k_slot, head_dim_));
      float total = 0.0f;
      for (int64_t t = 0; t < length; ++t) total += scores[t] = std::exp(scores[t] - top);
      const float inverse = 1.0f / total;
      for (int64_t t = 0; t < length; ++t) axpy(scores[t] * inverse, v + t * v_slot, out, head_dim_);
    }
  }

  int64_t hidden_, inter_, heads_, kv_heads_, head_dim_, vocab_;
  float eps_;
  std::vector<Layer> layers_;
  Matrix embed_, lm_head_;
  torch::Tensor norm_, cos_, sin_;
  std::vector<torch::Tensor> keys_, values_;
  int64_t rows_ = 0;
  std::vector<float> x_, tmp_, normed_, qkv_, att_, gate_up_, mlp_, scores_, compact_;
  std::vector<BlockQ8_1> act_;
};

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("isa", [] { return std::string(isa_name(g_isa)); }, "the kernel variant this CPU runs");
  m.def("available_isas", [] {
    std::vector<std::string> names;
    for (Isa isa = detect_isa();; isa = static_cast<Isa>(static_cast<int>(isa) - 1)) {
      names.push_back(isa_name(isa));
      if (isa == Isa::kScalar) return names;
    }
  }, "the kernel variants this CPU can run, best first");
  m.def("use_isa", [](const std::string& name) {
    for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512Vnni}) {
      if (name == isa_name(isa)) {
        TORCH_CHECK(static_cast<int>(isa) <= static_cast<int>(detect_isa()), "this CPU cannot run ", name);
        g_isa = isa;
        return;
      }
    }
    TORCH_CHECK(false, "unknown kernel variant ", name);
  }, "run this variant from now on (tests compare them)");
  m.def("quantize", &quantize, "float rows -> raw Q4_1 (format 1) or Q8_0 (format 2) blocks");
  m.def("dequantize", &dequantize, "raw blocks -> float rows");
  m.def("linear", &linear, "x W^T with W in raw blocks and x quantized to int8 blocks");
  py::class_<DecodeModel>(m, "DecodeModel")
      .def(py::init<std::vector<std::vector<torch::Tensor>>, std::vector<std::vector<int64_t>>, torch::Tensor, int64_t,
                    torch::Tensor, int64_t, torch::Tensor, torch::Tensor, torch::Tensor, std::vector<int64_t>,
                    double>())
      .def("bind_cache", &DecodeModel::bind_cache)
      .def("step", &DecodeModel::step, py::call_guard<py::gil_scoped_release>());
}
