// Gate kind `routed` (the third paradigm, [GateAttn-Guide] §3.3 "Gate做多路Attention路由"; docs/gates.md#references):
// attention experts with different spans (`windows`) share q, k, v; a softmax router r = softmax(h·Wᵀ
// + b) picks each token's top-k experts and mixes their outputs, y = Σ_e r̃_e y_e. With top_k = 1
// the chosen expert keeps its probability (r̃_e = r_e, as in the Switch Transformer [Fedus 2022]), so the router
// learns from the loss; renormalising a single probability would give exactly 1 and no gradient.
// With top_k ≥ 2 the chosen ones are renormalised to sum to 1. Each expert computes only the query
// rows routed to it (the others have weight exactly 0), so top-1 of E experts costs about one
// expert's attention. The Switch load-balance loss keeps the router from collapsing onto one expert.
// The ramp (ramp_start, ramp_steps) blends the mixture in from the plain causal attention,
// y = (1 − r)·y_full + r·Σ_e r̃_e y_e: at r = 0 the layer is exactly an ungated attention, which is how
// a router added to a trained model (train.init_from) starts at the model's own function.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>

#include "core/autograd/grad_mode.h"
#include "models/gating/activation.h"
#include "models/gating/gate.h"
#include "models/gating/options.h"
#include "models/gating/registry.h"
#include "models/inspection.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/nn_functional.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "ops/unary.h"

namespace gattn::models {

namespace {

constexpr const char* kRouterBalance = "router_balance";

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

// Σ over selected experts of h(r̃_e), differentiable. r̃_e = σ(u_e) with u_e = z_e − LSE_{j∈pool∖e} z_j,
// where the pool is the experts r̃ is normalised over (all of them for top_k = 1, the selected ones
// otherwise), so the entropy comes from the logit and stays finite where r̃ rounds to 0 or 1.
// Needs a pool of at least two experts.
Tensor selected_gate_entropy(const Tensor& z, const Tensor& selected, const Tensor& pool) {
  const std::int64_t E = z.size(-1);
  const Shape& s = z.shape();
  const std::int64_t tokens = z.numel() / E;
  // others[t, e, j] = 1 when j is in the pool and j != e; shift[t, e] = max of z over those j.
  std::vector<double> zv = z.to_vector(), pv = pool.to_vector();
  std::vector<double> others(static_cast<std::size_t>(tokens * E * E), 0.0),
      shift(static_cast<std::size_t>(tokens * E), 0.0);
  for (std::int64_t t = 0; t < tokens; ++t)
    for (std::int64_t e = 0; e < E; ++e) {
      double m = -std::numeric_limits<double>::infinity();
      for (std::int64_t j = 0; j < E; ++j)
        if (j != e && pv[static_cast<std::size_t>(t * E + j)] != 0.0) {
          others[static_cast<std::size_t>((t * E + e) * E + j)] = 1.0;
          m = std::max(m, zv[static_cast<std::size_t>(t * E + j)]);
        }
      shift[static_cast<std::size_t>(t * E + e)] = std::isinf(m) ? 0.0 : m;
    }
  Shape pair_shape = s;
  pair_shape.push_back(E);
  Tensor others_t = Tensor::from(others, pair_shape, z.dtype()).to(z.device());
  Tensor shift_t = Tensor::from(shift, s, z.dtype()).to(z.device());
  // LSE over pool∖e, shifted by its max so the sum is >= 1 and its log finite.
  Tensor shifted = ops::unsqueeze(z, -2) - ops::unsqueeze(shift_t, -1);  // [..., E(e), E(j)]
  Tensor lse_others = ops::log(ops::sum(ops::exp(shifted) * others_t, {-1})) + shift_t;
  return ops::sum(binary_entropy_from_logit(z - lse_others) * selected);
}

// The router's decision for a batch of tokens.
struct Routing {
  Tensor z, r, mask;  // logits, softmax, 0/1 top-k mask: [B, T, E]
  Tensor weights;     // r̃: the mixing weights, zero outside the top-k
  // r̃ normalised to sum to 1 per token (= weights for top_k ≥ 2, = mask for top_k = 1): how much of
  // the mixed attention row comes from each expert, for the statistics and inspection.
  Tensor shares;
  std::vector<double> mask_v;

  // Whether any token selected expert e. An unselected expert contributes r̃_e = 0 and, r̃_e being
  // masked, no gradient: callers skip it.
  bool used(std::int64_t e) const {
    const auto E = static_cast<std::size_t>(mask.size(-1));
    for (std::size_t t = static_cast<std::size_t>(e); t < mask_v.size(); t += E)
      if (mask_v[t] != 0.0) return true;
    return false;
  }
  // The tokens routed to expert e as i32 [B, T] (undefined when every token is: the op's fast path).
  Tensor active(std::int64_t e, const Tensor& like) const {
    const auto E = static_cast<std::size_t>(mask.size(-1));
    std::vector<std::int32_t> rows(mask_v.size() / E);
    bool all = true;
    for (std::size_t t = 0; t < rows.size(); ++t) {
      rows[t] = mask_v[t * E + static_cast<std::size_t>(e)] != 0.0 ? 1 : 0;
      all = all && rows[t];
    }
    if (all) return Tensor();
    return Tensor::from_ints(rows, {mask.size(0), mask.size(1)}).to(like.device());
  }
};

class RoutedGate : public Gate {
 public:
  RoutedGate(const ModelConfig& model, const GateConfig& gate, Generator& init)
      : windows_(gate.int_list_option("windows")), top_k_(gate.int_option("top_k")), options_(GateOptions::of(gate)) {
    const auto E = static_cast<std::int64_t>(windows_.size());
    weight = register_parameter("weight", init_gate_weight({E, model.n_embd}, model, gate, init));
    bias = register_parameter("bias", Tensor::zeros({E}, model.dtype));  // uniform routing at the start
  }

  bool mixes_attention() const override { return true; }

  Tensor attend(const AttentionInputs& in, const ops::AttentionTerms& terms, AttentionContext& ctx) override {
    const double ramp = options_.ramp_at(ctx.step);
    if (ramp == 0.0) return run_attention(in, terms, ctx).out;  // before the ramp: the plain attention
    const std::int64_t B = in.q.size(0), H = in.q.size(1), T = in.q.size(2);
    const auto E = static_cast<std::int64_t>(windows_.size());
    const Routing routing = route(in.h);
    const bool collect = ctx.collect_stats && ctx.stats;
    const bool want_rows = ctx.wants(kAttnEntropy) || collect;
    std::vector<double> sink(collect ? static_cast<std::size_t>(B * H * T) : 0, 0.0);
    Tensor y, row_entropy;
    for (std::int64_t e = 0; e < E; ++e) {
      if (!routing.used(e)) continue;
      ops::AttentionOptions options;
      options.window = windows_[static_cast<std::size_t>(e)];
      options.entropy_output = want_rows;
      options.active_queries = routing.active(e, in.q);
      ops::AttentionStats expert_stats;
      if (collect) options.stats = &expert_stats;
      ops::AttentionResult res = run_attention(in, terms, ctx, options, /*report_rows=*/false);
      if (collect) ctx.stats->gate.merge(expert_stats.modulation);
      accumulate(y, res.out * ops::reshape(ops::slice(routing.weights, 2, e, e + 1), {B, 1, T, 1}));
      // The mixed row is Ā_i = Σ_e s_e A^e_i with s the shares; its entropy is not a function of the
      // experts' entropies, so Σ_e s_e H(A^e_i) stands in for it: exact for top_k = 1 (one expert
      // per row), otherwise a lower bound on H(Ā_i) (H is concave). Ā_i0 is linear, so the sink
      // ratio below is exact.
      const Tensor share = ops::slice(routing.shares, 2, e, e + 1);  // [B, T, 1]
      if (want_rows) accumulate(row_entropy, res.row_entropy * ops::reshape(share, {B, 1, T}));
      if (collect) add_sink(in, terms, options, share, sink);
    }
    if (ctx.wants(kAttnEntropy))
      ctx.add_regularizer(kAttnEntropy, ops::sum(row_entropy), static_cast<double>(B * H * T));
    if (ctx.wants(kGateEntropy))
      ctx.add_regularizer(kGateEntropy, gate_entropy(routing), static_cast<double>(B * T * top_k_));
    if (ctx.wants(kRouterBalance))
      ctx.add_regularizer(kRouterBalance, switch_balance_loss(routing.r, routing.mask, top_k_), 0);
    if (ctx.inspect) inspect(in, terms, routing, *ctx.inspect);
    if (collect) report_stats(routing, row_entropy, sink, B, H, T, *ctx.stats);
    if (ramp < 1.0) y = y * ramp + run_attention(in, terms, ctx, {}, /*report_rows=*/false).out * (1.0 - ramp);
    return y;
  }

  Tensor attend_cached(const AttentionInputs& in, const LayerKVCache& cache, std::int64_t pos,
                       const ops::CachedAttentionInputs& terms, const AttentionContext& ctx) override {
    const double ramp = options_.ramp_at(ctx.step);
    if (ramp == 0.0) return run_cached_attention(in, cache, pos, terms);
    const std::int64_t B = in.q.size(0), n = in.q.size(2);
    const Routing routing = route(in.h);
    Tensor y;
    for (std::int64_t e = 0; e < static_cast<std::int64_t>(windows_.size()); ++e) {
      if (!routing.used(e)) continue;
      ops::CachedAttentionInputs expert = terms;
      expert.window = windows_[static_cast<std::size_t>(e)];
      Tensor w = ops::reshape(ops::slice(routing.weights, 2, e, e + 1), {B, 1, n, 1});
      accumulate(y, run_cached_attention(in, cache, pos, expert) * w);
    }
    if (ramp < 1.0) y = y * ramp + run_cached_attention(in, cache, pos, terms) * (1.0 - ramp);
    return y;
  }

  Tensor weight, bias;  // [E, C], [E]: registered as attn.router.*

 private:
  Routing route(const Tensor& h) const {
    Routing out;
    out.z = ops::linear(h, weight, bias);
    out.r = ops::softmax(out.z);
    out.mask = top_k_mask(out.z, top_k_);
    Tensor kept = out.r * out.mask;
    out.weights = top_k_ == 1 ? kept : kept / ops::sum(kept, {-1}, true);
    out.shares = top_k_ == 1 ? out.mask : out.weights;
    out.mask_v = out.mask.to_vector();
    return out;
  }

  // Σ h(r̃_e) over the selected experts. With one expert r̃ = 1 exactly: h = 0 with no gradient.
  Tensor gate_entropy(const Routing& routing) const {
    if (windows_.size() == 1) return Tensor::scalar(0.0, routing.z.dtype()).to(routing.z.device());
    const Tensor pool = top_k_ == 1
                            ? Tensor::full(routing.mask.shape(), 1.0, routing.mask.dtype(), routing.mask.device())
                            : routing.mask;
    return selected_gate_entropy(routing.z, routing.mask, pool);
  }

  // Adds s_e(i)·A^e_i0 per (b, h, i) to `sink`: expert e's attention on key 0, read as its output for
  // a value that is 1 on key 0 only (no pass exposes A_i0 per row). Statistics only: no gradient,
  // no noise.
  static void add_sink(const AttentionInputs& in, const ops::AttentionTerms& terms, const ops::AttentionOptions& expert,
                       const Tensor& share, std::vector<double>& sink) {
    NoGradGuard no_grad;
    const std::int64_t B = in.q.size(0), H = in.q.size(1), T = in.q.size(2), d = in.q.size(3);
    std::vector<double> key0(static_cast<std::size_t>(B * H * T * d), 0.0);
    for (std::int64_t bh = 0; bh < B * H; ++bh) std::fill_n(key0.begin() + bh * T * d, d, 1.0);
    ops::AttentionTerms plain = terms;
    plain.modulation_noise = nullptr;
    ops::AttentionOptions options;
    options.window = expert.window;
    options.active_queries = expert.active_queries;
    // One value row per key head (fewer than H with grouped-query attention): the same for each.
    const Tensor v0 = Tensor::from(std::vector<double>(key0.begin(), key0.begin() + B * in.k.size(1) * T * d),
                                   {B, in.k.size(1), T, d}, in.q.dtype())
                          .to(in.q.device());
    const std::vector<double> a0 =
        ops::flash_attention(in.q.detach(), in.k.detach(), v0, plain, options).out.to_vector();
    const std::vector<double> s = share.to_vector();  // [B, T]
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t h = 0; h < H; ++h)
        for (std::int64_t i = 0; i < T; ++i)
          sink[static_cast<std::size_t>((b * H + h) * T + i)] +=
              s[static_cast<std::size_t>(b * T + i)] * a0[static_cast<std::size_t>(((b * H + h) * T + i) * d)];
  }

  void report_stats(const Routing& routing, const Tensor& row_entropy, const std::vector<double>& sink, std::int64_t B,
                    std::int64_t H, std::int64_t T, LayerStats& stats) const {
    ops::AttentionStats st;
    for (double h : row_entropy.to_vector()) st.entropy_sum += h;
    st.entropy_count = B * H * T;
    for (std::int64_t bh = 0; bh < B * H; ++bh)
      for (std::int64_t i = 1; i < T; ++i) st.sink_sum += sink[static_cast<std::size_t>(bh * T + i)];
    st.sink_count = B * H * (T - 1);
    stats.attention.merge(st);
    const std::vector<double> w = routing.weights.to_vector();
    for (std::size_t t = 0; t < routing.mask_v.size(); ++t)
      if (routing.mask_v[t] != 0.0) stats.gate.add(w[t]);
  }

  // The mixed attention Ā_i = Σ_e s_e(i) A^e_i of the first sequence, the kept router weights r̃ as
  // the gate values, and the first expert's r̃ per position of every sequence.
  void inspect(const AttentionInputs& in, const ops::AttentionTerms& terms, const Routing& routing,
               LayerInspection& out) const {
    const std::int64_t H = in.q.size(1), T = in.q.size(2);
    const auto E = static_cast<std::int64_t>(windows_.size());
    const std::vector<double> s = routing.shares.to_vector(), w = routing.weights.to_vector();  // [B, T, E]
    out.attention.assign(static_cast<std::size_t>(H * T * T), 0.0);
    for (std::int64_t e = 0; e < E; ++e) {
      if (!routing.used(e)) continue;
      const std::vector<double> A = attention_weights(in.q, in.k, terms, windows_[static_cast<std::size_t>(e)]);
      for (std::int64_t h = 0; h < H; ++h)
        for (std::int64_t i = 0; i < T; ++i)
          for (std::int64_t j = 0; j < T; ++j) {
            const std::size_t at = static_cast<std::size_t>((h * T + i) * T + j);
            out.attention[at] += s[static_cast<std::size_t>(i * E + e)] * A[at];
          }
    }
    if (terms.modulation_row.defined()) inspect_modulation(terms, out);  // a pairwise gate beside the router
    for (std::size_t t = 0; t < routing.mask_v.size(); ++t)
      if (routing.mask_v[t] != 0.0) out.gate_values.push_back(w[t]);
    std::vector<double> first_expert(w.size() / static_cast<std::size_t>(E));  // [B, T]
    for (std::size_t i = 0; i < first_expert.size(); ++i) first_expert[i] = w[i * static_cast<std::size_t>(E)];
    add_gate_by_position(out, first_expert, static_cast<std::int64_t>(first_expert.size()) / T);
  }

  std::vector<std::int64_t> windows_;
  std::int64_t top_k_;
  GateOptions options_;  // the ramp
};

}  // namespace

GATTN_GATE_KIND(routed) {
  GateKindSpec s;
  s.name = "routed";
  s.summary =
      "experts = attention with spans `windows` sharing q, k, v; y = Σ_e r̃_e y_e over each token's top-k "
      "experts, r = softmax(h·Wᵀ + b); top_k 1: r̃ = r (Switch), top_k ≥ 2: renormalised";
  s.reference = "[GateAttn-Guide] §3.3, the third paradigm (多路Attention路由); Fedus et al. 2022, Switch Transformers";
  s.common_keys = {"init_weight", "init_std"};
  GateOptionSpec windows = gate_option(
      config::int_list_key("windows", {0, 32},
                           "expert attention spans: span w lets query i see keys i−w < j ≤ i, 0 = full causal")
          .at_least(0),
      [](const nlohmann::json& v, const std::string& key, const GateConfig& g, const ModelConfig& m) {
        if (!v.is_array() || v.empty())
          throw ValueError(key + ": needs a list of at least one expert span, got " + v.dump());
        // Spans the user wrote are held to the context; the default list and checkpoints' metadata
        // (no set_keys) keep their meaning, a span past the context being the full attention.
        const bool written = std::find(g.set_keys.begin(), g.set_keys.end(), "windows") != g.set_keys.end();
        std::set<std::int64_t> seen;
        for (const auto& w : v) {
          if (!w.is_number_integer() || w.get<std::int64_t>() < 0)
            throw ValueError(key + ": spans must be integers >= 0 (0 = full causal), got " + v.dump());
          // A span past the context sees every earlier key: it is the full causal attention.
          const std::int64_t span = w.get<std::int64_t>();
          if (written && span > m.block_size)
            throw ValueError(key + ": span " + std::to_string(span) + " exceeds model.block_size=" +
                             std::to_string(m.block_size) + ", so it is the full causal attention: write 0");
          if (written && !seen.insert(span).second)
            throw ValueError(key + ": span " + std::to_string(span) +
                             " is listed twice (two experts that attend alike)");
        }
      });
  GateOptionSpec top_k = gate_option(
      config::int_key("top_k", 1, "experts per token (1: weighted by its router probability; ≥ 2: renormalised)")
          .at_least(1),
      [](const nlohmann::json& v, const std::string& key, const GateConfig& g, const ModelConfig&) {
        const nlohmann::json windows = g.option("windows");
        const auto experts = static_cast<std::int64_t>(windows.is_array() ? windows.size() : 0);
        if (!v.is_number_integer() || v.get<std::int64_t>() < 1 || v.get<std::int64_t>() > experts)
          throw ValueError(key + ": must be an integer in [1, " + std::to_string(experts) + "] (the number of " +
                           g.where + ".windows), got " + v.dump());
      });
  s.options = {windows, top_k};
  for (GateOptionSpec& o : shared_gate_options({"ramp_start", "ramp_steps"})) s.options.push_back(std::move(o));
  s.gate_l1_refusal = "the router's weights are a softmax (their mean is fixed)";
  s.regularizers = {kRouterBalance};
  s.module_name = "router";
  s.gate_values = "the kept router weights r̃ (top_k per token)";
  s.parameter_doc = "`attn.router.weight` [E, C], `attn.router.bias` [E] (bias 0)";
  s.order = 50;
  s.stage = GateStage::y;  // the mixture of the experts' outputs
  s.parameters = [](const ModelConfig& m, const GateConfig& g) {
    const auto E = static_cast<std::int64_t>(g.int_list_option("windows").size());
    return std::vector<GateParameterSpec>{{"weight", {E, m.n_embd}}, {"bias", {E}}};
  };
  s.make = [](const ModelConfig& m, const GateConfig& g, Generator& init) {
    return std::make_shared<RoutedGate>(m, g, init);
  };
  s.multiply_adds = [](const ModelConfig& m, const GateConfig& g) {
    return static_cast<double>(g.int_list_option("windows").size()) * static_cast<double>(m.n_embd);
  };
  // Each token visits the keys of its top_k experts; routing spreads tokens over the experts, so a
  // token costs top_k/E of all experts' attention on average (each expert computes only its rows).
  s.attention_keys = [](const GateConfig& g, std::int64_t, const std::function<double(std::int64_t)>& mean_keys) {
    const std::vector<std::int64_t> windows = g.int_list_option("windows");
    double keys = 0;
    for (std::int64_t w : windows) keys += mean_keys(w);
    return keys * static_cast<double>(g.int_option("top_k")) / static_cast<double>(windows.size());
  };
  return s;
}

}  // namespace gattn::models
