// Gate kind `pair` ([GatedAttn-Repro] §2.2 "门控注意力创新设计", docs/gates.md#references): a per-(query, key)
// gate G_ij = σ(a_i + c_j) multiplying the softmax weights, mixed in by α = σ(alpha):
// A = P ⊙ (α·G + 1 − α). The gate supplies the O(T) row and column terms as the fused op's
// modulation; the op forms G tile by tile (with the gumbel noise when training; 1[G > θ] with the
// soft gradient for a hard gate) and never stores a T×T matrix. With `heads`, only the listed heads
// carry it: α is per head (σ(alpha) on a carried head, 0 elsewhere, so M = 1 there) and the
// parameters exist for the carried heads only.
#include <cmath>

#include "models/gating/activation.h"
#include "models/gating/gate.h"
#include "models/gating/options.h"
#include "models/gating/registry.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "ops/unary.h"

namespace gattn::models {

namespace {

bool shared(const GateConfig& gate) { return gate.option("shared_projection").get<bool>(); }

// The heads that carry the gate: `heads`, or every head.
std::int64_t carried_count(const ModelConfig& model, const GateOptions& options) {
  return options.heads.empty() ? model.n_head : static_cast<std::int64_t>(options.heads.size());
}

class PairGate : public Gate {
 public:
  PairGate(const ModelConfig& model, const GateConfig& gate, Generator& init)
      : gate_(gate), options_(GateOptions::of(gate)), n_head_(model.n_head), head_dim_(model.head_dim()) {
    const std::int64_t carried = carried_count(model, options_);
    if (shared(gate)) {
      weight = register_parameter("weight", init_gate_weight({carried, head_dim_}, model, gate, init));
    } else {
      wq = register_parameter("wq", init_gate_weight({carried, head_dim_}, model, gate, init));
      wk = register_parameter("wk", init_gate_weight({carried, head_dim_}, model, gate, init));
    }
    bias = register_parameter("bias", init_gate_bias({carried / options_.groups}, model, gate));
    if (carried < n_head_) {
      GateOptions per_head = options_;
      per_head.groups = 1;
      head_rows_ = head_units(n_head_, per_head);
      group_rows_ = head_units(n_head_, options_);
      std::vector<double> mask(static_cast<std::size_t>(n_head_), 0.0);
      for (std::int64_t h : options_.heads) mask[static_cast<std::size_t>(h)] = 1.0;
      head_mask_ = Tensor::from(mask, {n_head_}, model.dtype);
      alpha_mask_ = mask;
    }
    // α = σ(alpha) starts at alpha_init (default 1/2: alpha 0, half the attention mass open to
    // gating); [GatedAttn-Repro] §5.1 tunes it per task (0.5, 0.7, 0.9).
    const double a0 = gate.option("alpha_init").get<double>();
    alpha = register_parameter("alpha", Tensor::full({1}, std::log(a0 / (1.0 - a0)), model.dtype));
  }

  void add_terms(const AttentionInputs& in, ops::AttentionTerms& terms, AttentionContext& ctx) override {
    terms.modulation_row = row_term(in.q);
    terms.modulation_col = col_term(in.k);
    // The ramp scales α: α·(r·G + 1 − r) + 1 − α = (α·r)·G + 1 − α·r.
    const double r = options_.ramp_at(ctx.step);
    terms.modulation_alpha = r == 1.0 ? ops::sigmoid(alpha) : ops::mul_scalar(ops::sigmoid(alpha), r);
    if (head_mask_.defined()) {
      // α per head: the carried heads' α, 0 on the others (M = 1: no gate there).
      terms.modulation_alpha = terms.modulation_alpha * head_mask_.to(alpha.device());
      terms.modulation_heads = options_.heads;
    }
    terms.modulation_temperature = options_.temperature_at(ctx.step);
    if (options_.hard) terms.modulation_hard_threshold = options_.hard_threshold;
    terms.modulation_softplus = softplus();
    if (options_.dropout > 0.0 && ctx.training) {
      // A connection (i, j) dropped reads G = 1 (M = 1): a mask per entry inside the fused kernels,
      // from the model's noise stream (checkpointed with it).
      if (!ctx.noise)
        throw ValueError(gate_.where + ".dropout: needs a noise generator while training (AttentionContext.noise)");
      terms.modulation_dropout = options_.dropout;
      terms.modulation_dropout_noise = ctx.noise;
    }
    if (gate_noise_active(gate_, ctx)) {
      if (!ctx.noise)
        throw ValueError(gate_.where +
                         ".activation: gumbel_sigmoid needs a noise generator while training (AttentionContext.noise)");
      terms.modulation_noise = ctx.noise;
    }
    // Its statistics, gate entropy and inspected values come from the fused op (run_attention).
  }

  void add_cached_terms(const AttentionInputs& in, LayerKVCache& cache, std::int64_t pos,
                        ops::CachedAttentionInputs& terms, const AttentionContext& ctx) override {
    write_cache_rows(cache_term(cache.modulation_col, cache), col_term(in.k), pos);
    terms.modulation_row = row_term(in.q);
    terms.modulation_col = cache.modulation_col;
    terms.modulation_alpha = options_.ramp_at(ctx.step) / (1.0 + std::exp(-alpha.item()));
    if (!alpha_mask_.empty())
      for (double m : alpha_mask_) terms.modulation_alpha_by_head.push_back(m * terms.modulation_alpha);
    terms.modulation_temperature = options_.temperature_at(ctx.step);
    if (options_.hard) terms.modulation_hard_threshold = options_.hard_threshold;
    terms.modulation_softplus = softplus();
  }

  // The modulation α·act((a_i + b_j)/τ) + 1 − α rises with b_j for every query (σ and softplus both rise).
  bool ranks_keys() const override { return true; }

  Tensor wq, wk;       // [H, d] each; or
  Tensor weight;       // [H, d]: shared_projection, one w for q and k
  Tensor bias, alpha;  // [H/groups], [1]

 private:
  bool softplus() const { return gate_.activation == "softplus"; }

  // a_i = q_i·wq_n + b_n and c_j = k_j·wk_n per head, on the unscaled q, k (LayerNorm'd over d with
  // input_norm): [B, H, T]. With groups G, one gate per G consecutive heads: a and c summed over the
  // group's heads (its q's and k's through their own wq, wk), b per group, the same G_ij on each head.
  Tensor row_term(const Tensor& q) const {
    return grouped(ops::sum(gate_input_norm(q, options_) *
                                ops::reshape(every_head(weight.defined() ? weight : wq), {1, n_head_, 1, head_dim_}),
                            {3}),
                   every_group(bias));
  }
  // k_j·wk_n for every query head n. With grouped-query attention k has H_kv heads and query head n
  // reads key head n / (H/H_kv): the product is taken per group, [B, H_kv, G, T, d], with no copy of k.
  Tensor col_term(const Tensor& k) const {
    const Tensor w = every_head(weight.defined() ? weight : wk);
    const Tensor kn = gate_input_norm(k, options_);
    const std::int64_t kv = k.size(1);
    if (kv == n_head_) return grouped(ops::sum(kn * ops::reshape(w, {1, n_head_, 1, head_dim_}), {3}), Tensor());
    const std::int64_t B = k.size(0), T = k.size(2), G = n_head_ / kv;
    const Tensor per_group =
        ops::sum(ops::reshape(kn, {B, kv, 1, T, head_dim_}) * ops::reshape(w, {1, kv, G, 1, head_dim_}),
                 {4});  // [B, H_kv, G, T]
    return grouped(ops::reshape(per_group, {B, n_head_, T}), Tensor());
  }
  // x [B, H, T] per head -> the group sums (+ b per group), repeated over the group's heads.
  Tensor grouped(const Tensor& x, const Tensor& b) const {
    const std::int64_t G = options_.groups, U = n_head_ / G, B = x.size(0), T = x.size(2);
    if (G == 1) return b.defined() ? x + ops::reshape(b, {1, n_head_, 1}) : x;
    Tensor u = ops::sum(ops::reshape(x, {B, U, G, T}), {2}, true);  // [B, U, 1, T]
    if (b.defined()) u = u + ops::reshape(b, {1, U, 1, 1});
    return ops::reshape(u * Tensor::ones({1, 1, G, 1}, x.dtype(), x.device()), {B, n_head_, T});
  }

  // With `heads`: a carried-heads parameter [carried, d] as [H, d], zero rows on the other heads
  // (whose α is 0, so they pass no gradient back); the bias [carried/G] as [H/G]. Identity otherwise.
  Tensor every_head(const Tensor& w) const {
    if (!head_mask_.defined()) return w;
    const std::int64_t carried = w.size(0);
    return ops::reshape(expand_to_heads(ops::reshape(w, {1, carried * head_dim_}), head_rows_, head_dim_, 0.0),
                        {n_head_, head_dim_});
  }
  Tensor every_group(const Tensor& b) const {
    if (!head_mask_.defined()) return b;
    const std::int64_t G = options_.groups, U = n_head_ / G;
    const Tensor per_head = expand_to_heads(ops::reshape(b, {1, b.size(0)}), group_rows_, 1, 0.0);  // [1, H]
    return ops::reshape(ops::slice(ops::reshape(per_head, {U, G}), 1, 0, 1), {U});
  }

  GateConfig gate_;
  GateOptions options_;
  std::int64_t n_head_, head_dim_;
  HeadUnits head_rows_, group_rows_;  // with `heads`: one unit per carried head; the gate's groups
  Tensor head_mask_;                  // with `heads`: [H], 1 on the carried heads; undefined without
  std::vector<double> alpha_mask_;    // the same values, for generation's per-head α
};

}  // namespace

GATTN_GATE_KIND(pair) {
  GateKindSpec s;
  s.name = "pair";
  s.summary =
      "A = P ⊙ (α·G + 1 − α) after softmax, G_ij = σ(q_i·wq_n + k_j·wk_n + b_n) (softplus: log(1 + e^z), "
      "values in (0, ∞)), α = σ(alpha)";
  s.reference = "[GatedAttn-Repro] §2.2 (门控注意力创新设计)";
  s.common_keys = {"activation", "temperature", "init_bias", "init_weight", "init_std"};
  // softplus ([GatedAttn-Repro] §7's "sigmoid vs softplus") multiplies the softmax weights by
  // α·softplus(u) + 1 − α > 0: it may raise them as well as lower them.
  s.activations = {"sigmoid", "gumbel_sigmoid", "softplus"};
  s.gate_values = "G_ij over the visible (query, key) pairs";
  s.parameter_doc =
      "`wq` [U, d], `wk` [U, d] (or `weight` [U, d] with shared_projection), `bias` [U/groups], `alpha` [1] "
      "(log(α₀/(1−α₀)), α₀ = `alpha_init`; U = H, or the number of `heads`)";
  GateOptionSpec alpha_init =
      gate_option(config::num_key("alpha_init", 0.5, "the initial α, in (0, 1): alpha starts at log(α/(1−α))")
                      .greater_than(0)
                      .below(1),
                  [](const nlohmann::json& v, const std::string& key, const GateConfig&, const ModelConfig&) {
                    if (!v.is_number() || !(v.get<double>() > 0.0 && v.get<double>() < 1.0))
                      throw ValueError(key + ": must be a number in (0, 1), got " + v.dump());
                  });
  GateOptionSpec shared_projection =
      gate_option(config::bool_key("shared_projection", false,
                                   "one projection w per head for q and k: G_ij = σ(w·(q_i + k_j) + b)"),
                  [](const nlohmann::json& v, const std::string& key, const GateConfig&, const ModelConfig&) {
                    if (!v.is_boolean()) throw ValueError(key + ": expected true or false, got " + v.dump());
                  });
  s.options = {alpha_init, shared_projection};
  // gate_l1: the fused op returns Σ G per head with its gradient (AttentionOptions::modulation_sum).
  s.logged_parameters = {{"pair_alpha", "alpha", [](double a) { return 1.0 / (1.0 + std::exp(-a)); }, "α = σ(alpha)"}};
  // hard and dropout are terms of the fused kernels (CPU and CUDA; dropout a Philox mask per entry),
  // groups the same row and column terms for a group's heads, heads a per-head α (0 on the heads
  // without the gate).
  for (GateOptionSpec& o :
       shared_gate_options({"temperature_final", "temperature_steps", "hard", "hard_threshold", "groups", "heads",
                            "input_norm", "dropout", "ramp_start", "ramp_steps"}))
    s.options.push_back(std::move(o));
  s.order = 40;
  s.stage = GateStage::probabilities;
  s.parameters = [](const ModelConfig& m, const GateConfig& g) {
    const GateOptions o = GateOptions::of(g);
    const std::int64_t carried = carried_count(m, o);
    if (shared(g))
      return std::vector<GateParameterSpec>{
          {"weight", {carried, m.head_dim()}}, {"bias", {carried / o.groups}}, {"alpha", {1}}};
    return std::vector<GateParameterSpec>{{"wq", {carried, m.head_dim()}},
                                          {"wk", {carried, m.head_dim()}},
                                          {"bias", {carried / o.groups}},
                                          {"alpha", {1}}};
  };
  s.make = [](const ModelConfig& m, const GateConfig& g, Generator& init) {
    return std::make_shared<PairGate>(m, g, init);
  };
  // q·wq and k·wk per head.
  s.multiply_adds = [](const ModelConfig& m, const GateConfig& g) {
    return static_cast<double>(2 * carried_count(m, GateOptions::of(g)) * m.head_dim());
  };
  return s;
}

}  // namespace gattn::models
