// Gate kind `routed` (seed 000, paradigm 3): attention experts with different spans
// (model.gate.windows) share q, k, v; a softmax router picks each token's top-k experts,
// renormalises over them and mixes their outputs: y = Σ_e r̃_e y_e. The Switch-Transformer
// load-balance loss keeps the router from collapsing onto one expert.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "framework/autograd/grad_mode.h"
#include "models/gates/gates.h"
#include "models/inspection.h"
#include "models/regularizers.h"
#include "ops/elementwise.h"
#include "ops/nn_functional.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "ops/unary.h"

namespace gattn::models {

namespace {

// 0/1 mask [B, T, E] of each token's top_k experts by router logit; ties go to the lower index.
Tensor top_k_mask(const Tensor& logits, std::int64_t top_k) {
  const std::int64_t E = logits.size(-1), tokens = logits.numel() / E;
  std::vector<double> z = logits.to_vector(), mask(z.size(), 0.0);
  std::vector<std::int64_t> order(static_cast<std::size_t>(E));
  for (std::int64_t t = 0; t < tokens; ++t) {
    const double* row = z.data() + t * E;
    std::iota(order.begin(), order.end(), 0);
    // NaN (a diverged router) sorts as −inf: the comparator must stay a strict weak order.
    auto key = [&](std::int64_t e) { return std::isnan(row[e]) ? -std::numeric_limits<double>::infinity() : row[e]; };
    std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) { return key(a) > key(b); });
    for (std::int64_t s = 0; s < top_k; ++s)
      mask[static_cast<std::size_t>(t * E + order[static_cast<std::size_t>(s)])] = 1.0;
  }
  return Tensor::from(mask, logits.shape(), logits.dtype()).to(logits.device());
}

// Σ over selected experts of h(r̃_e), differentiable. r̃_e = σ(u_e) with u_e = z_e − LSE_{j∈S∖e} z_j
// (the renormalised softmax of two groups: e and the other selected experts), so the entropy comes
// from the logit and stays finite even where r̃ rounds to 0 or 1. Needs top_k >= 2 (S∖e non-empty).
Tensor selected_gate_entropy(const Tensor& z, const Tensor& mask) {
  const std::int64_t E = z.size(-1);
  const Shape& s = z.shape();
  const std::int64_t tokens = z.numel() / E;
  // others[t, e, j] = 1 when j is selected and j != e; shift[t, e] = max of z over those j.
  std::vector<double> zv = z.to_vector(), mv = mask.to_vector();
  std::vector<double> others(static_cast<std::size_t>(tokens * E * E), 0.0),
      shift(static_cast<std::size_t>(tokens * E), 0.0);
  for (std::int64_t t = 0; t < tokens; ++t)
    for (std::int64_t e = 0; e < E; ++e) {
      double m = -std::numeric_limits<double>::infinity();
      for (std::int64_t j = 0; j < E; ++j)
        if (j != e && mv[static_cast<std::size_t>(t * E + j)] != 0.0) {
          others[static_cast<std::size_t>((t * E + e) * E + j)] = 1.0;
          m = std::max(m, zv[static_cast<std::size_t>(t * E + j)]);
        }
      shift[static_cast<std::size_t>(t * E + e)] = m;
    }
  Shape pair_shape = s;
  pair_shape.push_back(E);
  Tensor others_t = Tensor::from(others, pair_shape, z.dtype()).to(z.device());
  Tensor shift_t = Tensor::from(shift, s, z.dtype()).to(z.device());
  // LSE over S∖e, shifted by its max so the sum is >= 1 and its log finite.
  Tensor shifted = ops::unsqueeze(z, -2) - ops::unsqueeze(shift_t, -1);  // [..., E(e), E(j)]
  Tensor lse_others = ops::log(ops::sum(ops::exp(shifted) * others_t, {-1})) + shift_t;
  return ops::sum(binary_entropy_from_logit(z - lse_others) * mask);
}

// The router's decision for a batch of tokens: r = softmax(z), the top-k mask and the
// renormalised weights r̃ (zero outside the top-k).
struct Routing {
  Tensor z, r, mask, weights;  // [B, T, E]
  std::vector<double> mask_v;

  // Whether any token selected expert e. An unselected expert contributes r̃_e = 0 and, r̃_e being
  // masked, no gradient: callers skip it.
  bool used(std::int64_t e) const {
    const auto E = static_cast<std::size_t>(mask.size(-1));
    for (std::size_t t = static_cast<std::size_t>(e); t < mask_v.size(); t += E)
      if (mask_v[t] != 0.0) return true;
    return false;
  }
};

Routing route(nn::Linear& router, const Tensor& h, std::int64_t top_k) {
  Routing out;
  out.z = router.forward(h);
  out.r = ops::softmax(out.z);
  out.mask = top_k_mask(out.z, top_k);
  Tensor kept = out.r * out.mask;
  out.weights = kept / ops::sum(kept, {-1}, true);
  out.mask_v = out.mask.to_vector();
  return out;
}

// The mixed attention A_i = Σ_e r̃_e(i) A^e_i of the first sequence, the kept router weights as the
// gate values, and the first expert's weight per position.
void inspect_routing(const AttentionInputs& in, const Routing& routing, const std::vector<std::int64_t>& windows,
                     LayerInspection& out) {
  const std::int64_t H = in.q.size(1), T = in.q.size(2);
  const auto E = static_cast<std::int64_t>(windows.size());
  const std::vector<double> w = routing.weights.to_vector();  // [B, T, E]
  out.attention.assign(static_cast<std::size_t>(H * T * T), 0.0);
  for (std::int64_t e = 0; e < E; ++e) {
    if (!routing.used(e)) continue;
    const std::vector<double> A = attention_weights(in.q, in.k, {}, windows[static_cast<std::size_t>(e)]);
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t i = 0; i < T; ++i)
        for (std::int64_t j = 0; j < T; ++j) {
          const std::size_t at = static_cast<std::size_t>((h * T + i) * T + j);
          out.attention[at] += w[static_cast<std::size_t>(i * E + e)] * A[at];
        }
  }
  for (std::size_t t = 0; t < routing.mask_v.size(); ++t)
    if (routing.mask_v[t] != 0.0) out.gate_values.push_back(w[t]);
  out.gate_by_token.resize(static_cast<std::size_t>(T));
  for (std::int64_t i = 0; i < T; ++i) out.gate_by_token[static_cast<std::size_t>(i)] = w[static_cast<std::size_t>(i * E)];
}

}  // namespace

RoutedGate::RoutedGate(const ModelConfig& config, Generator& init) : gate_(config.gate) {
  const auto E = static_cast<std::int64_t>(config.gate.windows.size());
  nn::LinearOptions opt;
  opt.dtype = config.dtype;
  router = std::make_shared<nn::Linear>(config.n_embd, E, init, opt);
  if (config.gate.init_weight == "zero") router->weight.fill(0.0);  // bias stays 0: uniform routing at start
}

Tensor RoutedGate::attend(const AttentionInputs& in, AttentionContext& ctx) {
  const std::int64_t B = in.q.size(0), H = in.q.size(1), T = in.q.size(2), d = in.q.size(3);
  const auto E = static_cast<std::int64_t>(gate_.windows.size());
  const std::int64_t top_k = gate_.top_k;
  const Routing routing = route(*router, in.h, top_k);
  const Tensor &z = routing.z, &r = routing.r, &mask = routing.mask, &weights = routing.weights;

  const bool collect = ctx.collect_stats && ctx.stats;
  const bool want_rows = ctx.attn_entropy || collect;
  const std::vector<double>& mask_v = routing.mask_v;
  std::vector<double> weights_v = collect ? weights.to_vector() : std::vector<double>();
  std::vector<double> sink(collect ? static_cast<std::size_t>(B * H * T) : 0, 0.0);
  Tensor y, row_entropy;
  for (std::int64_t e = 0; e < E; ++e) {
    if (!routing.used(e)) continue;
    ops::AttentionOptions options;
    options.window = gate_.windows[static_cast<std::size_t>(e)];
    options.entropy_output = want_rows;
    ops::AttentionResult res = ops::flash_attention(in.q, in.k, in.v, {}, options);
    Tensor w = ops::slice(weights, 2, e, e + 1);  // [B, T, 1]
    accumulate(y, res.out * ops::reshape(w, {B, 1, T, 1}));
    // The mixed attention row is A_i = Σ_e r̃_e A^e_i; its entropy is not a function of the experts'
    // entropies, so Σ_e r̃_e H(A^e_i) stands in for it: exact for top_k = 1, otherwise a lower bound
    // on H(A_i) (H is concave). A_i0 is linear in A, so the sink ratio below is exact.
    if (want_rows) accumulate(row_entropy, res.row_entropy * ops::reshape(w, {B, 1, T}));
    if (collect) {
      // A_i0 per row: attention of a value that is 1 on key 0 only (no pass exposes A_i0 per row).
      NoGradGuard no_grad;
      std::vector<double> key0(static_cast<std::size_t>(B * H * T * d), 0.0);
      for (std::int64_t bh = 0; bh < B * H; ++bh) std::fill_n(key0.begin() + bh * T * d, d, 1.0);
      ops::AttentionOptions plain;
      plain.window = options.window;
      const Tensor v0 = Tensor::from(key0, in.q.shape(), in.q.dtype()).to(in.q.device());
      std::vector<double> a0 = ops::flash_attention(in.q.detach(), in.k.detach(), v0, {}, plain).out.to_vector();
      for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t h = 0; h < H; ++h)
          for (std::int64_t i = 0; i < T; ++i)
            sink[static_cast<std::size_t>((b * H + h) * T + i)] +=
                weights_v[static_cast<std::size_t>((b * T + i) * E + e)] *
                a0[static_cast<std::size_t>(((b * H + h) * T + i) * d)];
    }
  }

  if (ctx.attn_entropy) {
    accumulate(ctx.attn_entropy_sum, ops::sum(row_entropy));
    ctx.attn_entropy_count += static_cast<double>(B * H * T);
  }
  if (ctx.gate_entropy) {
    // With one expert per token r̃ = 1 exactly: h = 0 with no gradient.
    accumulate(ctx.gate_entropy_sum, top_k == 1 ? Tensor::scalar(0.0, z.dtype()).to(z.device()) : selected_gate_entropy(z, mask));
    ctx.gate_entropy_count += static_cast<double>(B * T * top_k);
  }
  if (ctx.router_balance) accumulate(ctx.router_balance_sum, switch_balance_loss(r, mask, top_k));
  if (ctx.inspect) inspect_routing(in, routing, gate_.windows, *ctx.inspect);
  if (collect) {
    ops::AttentionStats st;
    for (double h : row_entropy.to_vector()) st.entropy_sum += h;
    st.entropy_count = B * H * T;
    for (std::int64_t bh = 0; bh < B * H; ++bh)
      for (std::int64_t i = 1; i < T; ++i) st.sink_sum += sink[static_cast<std::size_t>(bh * T + i)];
    st.sink_count = B * H * (T - 1);
    ctx.stats->attention.merge(st);
    for (std::size_t t = 0; t < mask_v.size(); ++t)
      if (mask_v[t] != 0.0) ctx.stats->gate.add(weights_v[t]);
  }
  return merge_heads(y);
}

Tensor RoutedGate::attend_cached(const AttentionInputs& in, LayerKVCache& cache, std::int64_t pos) {
  const std::int64_t B = in.q.size(0), n = in.q.size(2);
  const auto E = static_cast<std::int64_t>(gate_.windows.size());
  const Routing routing = route(*router, in.h, gate_.top_k);
  Tensor y;
  for (std::int64_t e = 0; e < E; ++e) {
    if (!routing.used(e)) continue;
    ops::CachedAttentionInputs terms;
    terms.window = gate_.windows[static_cast<std::size_t>(e)];
    Tensor w = ops::reshape(ops::slice(routing.weights, 2, e, e + 1), {B, 1, n, 1});
    accumulate(y, run_cached_attention(in, cache, pos, terms) * w);
  }
  return merge_heads(y);
}

}  // namespace gattn::models
