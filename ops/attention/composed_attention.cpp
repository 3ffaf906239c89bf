// The composed attention: ops/attention/attention.h's math (causal or not, Tq and Tk of their own, key/value heads
// shared by groups of query heads or not) written term by term with the primitive autograd ops, so its gradients come
// from those ops' (separately gradchecked) backwards, on any device.
#include "ops/attention/composed_attention.h"

#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "core/tensor/philox.h"
#include "core/tensor/random.h"
#include "ops/common.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/nn_functional.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "ops/unary.h"

namespace gattn::ops {

namespace {

// A row term is [B, H, Tq], a column term [B, H, Tk] (length = Tq or Tk): per query head.
void check_term(const Tensor& t, const Tensor& q, std::int64_t length, const char* name) {
  if (!t.defined()) return;
  const Shape want{q.size(0), q.size(1), length};
  if (t.shape() != want)
    throw ShapeError(std::string("composed_attention: ") + name + " has shape " + shape_str(t.shape()) + ", expected " +
                     shape_str(want));
}

// One uniform per (b·h, i, j) entry, drawn exactly as the fused kernel draws its noise and its
// dropout (ops/attention/cpu/flash_attention.h): B·H·Tq·Tk words of the generator reserved, entry
// (bh, i, j) at word offset + (bh·Tq + i)·Tk + j, u = (top 24 bits + ½)/2²⁴ in (0, 1); each value
// mapped by `f`.
template <class F>
Tensor per_entry_uniforms(Generator& gen, std::int64_t BH, std::int64_t Tq, std::int64_t Tk, const Shape& shape,
                          DType dtype, Device device, F f) {
  const GeneratorState state = gen.state();
  const std::uint64_t offset = gen.reserve(static_cast<std::uint64_t>(BH) * static_cast<std::uint64_t>(Tq * Tk));
  std::vector<double> values(static_cast<std::size_t>(BH * Tq * Tk));
  for (std::size_t idx = 0; idx < values.size(); ++idx)
    values[idx] = f(philox_open_uniform(state.seed, state.stream, offset + idx));
  return Tensor::from(values, shape, dtype).to(device);
}

// The modulation's logistic noise n_ij = ln u − ln(1 − u).
Tensor logistic_noise(Generator& gen, std::int64_t BH, std::int64_t Tq, std::int64_t Tk, const Shape& shape,
                      DType dtype, Device device) {
  return per_entry_uniforms(gen, BH, Tq, Tk, shape, dtype, device,
                            [](double u) { return std::log(u) - std::log1p(-u); });
}

// The modulation dropout's keep mask (words reserved after the noise's): 0 where u < p (dropped),
// else 1.
Tensor dropout_keep(Generator& gen, double p, std::int64_t BH, std::int64_t Tq, std::int64_t Tk, const Shape& shape,
                    DType dtype, Device device) {
  return per_entry_uniforms(gen, BH, Tq, Tk, shape, dtype, device, [p](double u) { return u < p ? 0.0 : 1.0; });
}

// x [B, H_kv, Tk, d] with each key/value head repeated for the `group` query heads that read it:
// [B, H_kv·group, Tk, d], head h = copy of head h / group (as Hugging Face's repeat_kv). The
// oracle may copy; its gradient sums the copies back onto each key/value head.
Tensor repeat_heads(const Tensor& x, std::int64_t group) {
  if (group == 1) return x;
  const Tensor one = ops::unsqueeze(x, 2);  // [B, H_kv, 1, Tk, d]
  const Tensor copies = ops::concat(std::vector<Tensor>(static_cast<std::size_t>(group), one), 2);
  return ops::reshape(copies, {x.size(0), x.size(1) * group, x.size(2), x.size(3)});
}

}  // namespace

Tensor attention_hidden_mask(std::int64_t Tq, std::int64_t Tk, std::int64_t window, bool causal, Device device) {
  // A device mask is made once per (T, window) and kept: building it on the host and copying it
  // from pageable memory on every layer of every step stalled the GPU's stream. Masks are never
  // written, so sharing one is safe; the cache holds the few shapes a run uses.
  static std::mutex mu;
  static std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, bool, Device>, Tensor> cache;
  const auto key = std::make_tuple(Tq, Tk, window, causal, device);
  if (device != Device::cpu) {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  std::vector<std::int32_t> hidden(static_cast<std::size_t>(Tq * Tk));
  for (std::int64_t i = 0; i < Tq; ++i)
    for (std::int64_t j = 0; j < Tk; ++j)
      hidden[static_cast<std::size_t>(i * Tk + j)] = causal && (j > i || (window > 0 && i - j >= window));
  Tensor mask = Tensor::from_ints(hidden, {Tq, Tk}).to(device);
  if (device != Device::cpu) {
    std::lock_guard<std::mutex> lock(mu);
    if (cache.size() >= 16) cache.clear();
    cache.emplace(key, mask);
  }
  return mask;
}

AttentionResult composed_attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionTerms& terms,
                                   const AttentionOptions& options) {
  if (!q.defined() || !k.defined() || !v.defined()) throw ValueError("composed_attention: q, k, v must be defined");
  if (q.dim() != 4 || k.dim() != 4 || k.shape() != v.shape() || k.size(0) != q.size(0) || k.size(3) != q.size(3) ||
      (k.size(1) == 0 ? q.size(1) != 0 : q.size(1) % k.size(1) != 0))
    throw ShapeError(
        "composed_attention: q must be [B, H, Tq, d] and k, v [B, H_kv, Tk, d] with H_kv dividing H, got " +
        shape_str(q.shape()) + ", " + shape_str(k.shape()) + ", " + shape_str(v.shape()));
  if (options.window < 0) throw ValueError("composed_attention: window must be >= 0");
  if (!options.causal && options.window != 0)
    throw ValueError("composed_attention: window " + std::to_string(options.window) + " needs causal attention");
  if (options.causal && q.size(2) != k.size(2))
    throw ValueError("composed_attention: a causal mask needs as many queries as keys, got Tq " +
                     std::to_string(q.size(2)) + " and Tk " + std::to_string(k.size(2)));
  check_term(terms.row_bias, q, q.size(2), "row_bias");
  check_term(terms.col_bias, q, k.size(2), "col_bias");
  check_term(terms.modulation_row, q, q.size(2), "modulation_row");
  check_term(terms.modulation_col, q, k.size(2), "modulation_col");
  const bool modulated = terms.modulation_row.defined();
  if (modulated != terms.modulation_col.defined() || modulated != terms.modulation_alpha.defined())
    throw ValueError(
        "composed_attention: the modulation needs modulation_row, modulation_col and modulation_alpha together");
  if (options.modulation_entropy && !modulated)
    throw ValueError("composed_attention: modulation_entropy without modulation terms");
  if (options.modulation_sum && !modulated)
    throw ValueError("composed_attention: modulation_sum without modulation terms");
  if (modulated && terms.modulation_dropout > 0.0 && !terms.modulation_dropout_noise)
    throw ValueError("composed_attention: modulation_dropout needs its random source (modulation_dropout_noise)");
  check_active_queries(options.active_queries, q, "composed_attention");

  const std::int64_t B = q.size(0), H = q.size(1), T = q.size(2), Tk = k.size(2), d = q.size(3);
  const Device device = common_device(
      "composed_attention",
      {q, k, v, terms.row_bias, terms.col_bias, terms.modulation_row, terms.modulation_col, terms.modulation_alpha});
  const Tensor hidden = attention_hidden_mask(T, Tk, options.window, options.causal, device);
  // i32 [B, 1, T, 1]: 1 on skipped query rows (undefined: all active). A skipped row's q, row terms
  // and output gradient may be anything, NaN and Inf included (padding), and 0·NaN is NaN: so its
  // inputs and outputs are filled with 0 (masked_fill, whose gradient is 0 there too), never
  // multiplied by 0.
  Tensor skipped, skipped_row;  // [B, 1, T, 1] and [B, 1, T]
  if (options.active_queries.defined()) {
    skipped =
        ops::masked_fill(Tensor::ones({B, 1, T, 1}, q.dtype(), device), options.active_queries.alias({B, 1, T, 1}), 0.0)
            .to(DType::i32);
    skipped_row = skipped.alias({B, 1, T});
  }
  auto zero_skipped = [&](const Tensor& t, const Tensor& mask) {
    return skipped.defined() && t.defined() ? ops::masked_fill(t, mask, 0.0) : t;
  };

  // Each query head against its key/value head's keys and values.
  const std::int64_t group = k.size(1) == 0 ? 1 : H / k.size(1);
  const Tensor k_heads = repeat_heads(k, group), v_heads = repeat_heads(v, group);

  // S = q kᵀ/√d + c_j + r_i, hidden entries −∞.
  Tensor S = ops::mul_scalar(ops::matmul(zero_skipped(q, skipped), k_heads, false, true),
                             1.0 / std::sqrt(static_cast<double>(d)));
  if (terms.col_bias.defined()) S = S + ops::unsqueeze(terms.col_bias, 2);
  if (terms.row_bias.defined()) S = S + ops::unsqueeze(zero_skipped(terms.row_bias, skipped_row), 3);
  S = ops::masked_fill(S, hidden, -std::numeric_limits<double>::infinity());
  const Tensor P = ops::softmax(S);

  // A = P ⊙ M with M = α·G + 1 − α, G = σ(u) or softplus(u), u = (a_i + b_j + n_ij)/τ; a hard
  // modulation uses Gv = 1[G > θ] + (G − stop_gradient(G)): the threshold forward, G's gradient
  // backward; dropout then Gv ← keep·Gv + 1 − keep (1 where dropped, with no gradient there).
  Tensor A = P, u, G, Gv, M;
  if (modulated) {
    u = ops::unsqueeze(zero_skipped(terms.modulation_row, skipped_row), 3) + ops::unsqueeze(terms.modulation_col, 2);
    if (terms.modulation_noise)
      u = u + logistic_noise(*terms.modulation_noise, B * H, T, Tk, u.shape(), q.dtype(), device);
    u = ops::mul_scalar(u, 1.0 / terms.modulation_temperature);
    G = terms.modulation_softplus ? ops::neg(ops::log_sigmoid(ops::neg(u))) : ops::sigmoid(u);
    Gv = std::isnan(terms.modulation_hard_threshold)
             ? G
             : ops::heaviside(ops::add_scalar(G.detach(), -terms.modulation_hard_threshold)) + (G - G.detach());
    if (terms.modulation_dropout > 0.0) {
      const Tensor keep = dropout_keep(*terms.modulation_dropout_noise, terms.modulation_dropout, B * H, T, Tk,
                                       u.shape(), q.dtype(), device);
      Gv = ops::add_scalar(Gv * keep - keep, 1.0);
    }
    // α [1], or per head [H] broadcast over [B, H, Tq, Tk].
    const Tensor alpha = terms.modulation_alpha.numel() == 1 ? terms.modulation_alpha
                                                             : ops::reshape(terms.modulation_alpha, {1, H, 1, 1});
    M = ops::add_scalar(ops::mul(Gv, alpha) - alpha, 1.0);
    A = P * M;
  }

  AttentionResult result;
  result.out = ops::matmul(A, v_heads);
  result.out = zero_skipped(result.out, skipped);

  // H_i = −Σ_j A_ij ln A_ij with ln A = log_softmax(S) + ln M, zeroed where hidden before the
  // product (there A = 0 and ln A = −∞, whose product would be NaN, value and gradient).
  Tensor row_entropy;
  if (options.entropy_output || options.stats) {
    Tensor log_A = ops::log_softmax(S);
    if (modulated) log_A = log_A + ops::log(M);
    log_A = ops::masked_fill(log_A, hidden, 0.0);
    row_entropy = -ops::sum(A * log_A, {-1});
    row_entropy = zero_skipped(row_entropy, skipped_row);
    if (options.entropy_output) result.row_entropy = row_entropy;
  }

  // Σ over visible entries of h(G) = −G ln G − (1−G) ln(1−G) = −(G log σ(u) + (1−G) log σ(−u)).
  if (options.modulation_entropy) {
    const Tensor one_minus_G = ops::add_scalar(-G, 1.0);
    Tensor h = ops::masked_fill(-(G * ops::log_sigmoid(u) + one_minus_G * ops::log_sigmoid(-u)), hidden, 0.0);
    h = zero_skipped(h, skipped);
    result.modulation_entropy = ops::sum(h, {2, 3});
  }
  // Σ over visible entries of active rows of the soft G.
  if (options.modulation_sum)
    result.modulation_sum = ops::sum(zero_skipped(ops::masked_fill(G, hidden, 0.0), skipped), {2, 3});

  if (options.stats) {
    NoGradGuard no_grad;
    AttentionStats st;
    // Active rows per sequence (all T without active_queries) and whether row i of sequence b is one.
    std::vector<double> active_v = options.active_queries.defined()
                                       ? options.active_queries.to_vector()
                                       : std::vector<double>(static_cast<std::size_t>(B * T), 1.0);
    auto active = [&](std::int64_t b, std::int64_t i) { return active_v[static_cast<std::size_t>(b * T + i)] != 0.0; };
    // The sink counts queries i ≥ 1 when causal (query 0 sees key 0 alone), every query when not.
    const std::int64_t first_sink_row = options.causal ? 1 : 0;
    std::int64_t rows = 0, sink_rows = 0;
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t i = 0; i < T; ++i)
        if (active(b, i)) {
          ++rows;
          sink_rows += i >= first_sink_row;
        }
    // Entropy and sink are reduced where A lives (one small read each, no T×T copy to the host).
    st.entropy_sum = ops::sum(row_entropy).item();
    st.entropy_count = H * rows;
    if (T > first_sink_row) {  // A_i0 over those active queries; 0 where key 0 is hidden (outside the window)
      const Tensor A_kept = zero_skipped(A, skipped);
      st.sink_sum = ops::sum(ops::slice(ops::slice(A_kept, 2, first_sink_row, T), 3, 0, 1)).item();
      st.sink_count = H * sink_rows;
    }
    if (modulated) {  // the moments of G over visible entries of active rows need the values themselves
      const std::vector<double> g = Gv.to_vector(), hid = hidden.to_vector();
      st.modulation_by_head.resize(static_cast<std::size_t>(H));
      for (std::int64_t bh = 0; bh < B * H; ++bh)
        for (std::int64_t i = 0; i < T; ++i) {
          if (!active(bh / H, i)) continue;
          for (std::int64_t j = 0; j < Tk; ++j)
            if (hid[static_cast<std::size_t>(i * Tk + j)] == 0) {
              const double v = g[static_cast<std::size_t>((bh * T + i) * Tk + j)];
              st.modulation.add(v);
              st.modulation_by_head[static_cast<std::size_t>(bh % H)].add(v);
            }
        }
    }
    options.stats->merge(st);
  }
  return result;
}

}  // namespace gattn::ops
