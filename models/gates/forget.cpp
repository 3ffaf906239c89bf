// Gate kind `forget` (Lin et al. 2025, "Forgetting Transformer: Softmax Attention with a Forget
// Gate"): S_ij += c_i − c_j with c_i = Σ_{l≤i} log σ(f_ln), so key j is down-weighted by the forget
// gates between j and i. The fused op gets c as a row bias and −c as a column bias: O(T) memory, no
// T×T decay matrix. Its option prune_threshold θ lets the fused op skip the tiles of keys the decay has
// made provably negligible (adaptive computation pruning, ops/attention/attention.h).
#include "models/gating/activation.h"
#include "models/gating/gate.h"
#include "models/gating/options.h"
#include "models/gating/registry.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/scan.h"
#include "ops/shape.h"
#include "ops/unary.h"

namespace gattn::models {

namespace {

constexpr const char* kKind = "forget";

class ForgetGate : public Gate {
 public:
  ForgetGate(const ModelConfig& model, const GateConfig& gate, Generator& init)
      : gate_(gate),
        options_(GateOptions::of(gate)),
        units_(head_units(model.n_head, options_)),
        prune_threshold_(gate.option("prune_threshold").get<double>()) {
    weight = register_parameter("weight", init_gate_weight({units_.units, model.n_embd}, model, gate, init));
    bias = register_parameter("bias", init_gate_bias({units_.units}, model, gate));
  }

  void add_terms(const AttentionInputs& in, ops::AttentionTerms& terms, AttentionContext& ctx) override {
    GateEffect e = log_effect(activation(in, ctx), options_, ctx);  // [B, T, U]
    report_gate(e, ctx, {1, 2, &units_});
    Tensor c = ops::cumsum(log_forget(e), 2);  // [B, H, T]
    accumulate(terms.row_bias, c);
    accumulate(terms.col_bias, ops::neg(c));
  }

  void add_cached_terms(const AttentionInputs& in, LayerKVCache& cache, std::int64_t pos,
                        ops::CachedAttentionInputs& terms, const AttentionContext& ctx) override {
    Tensor c = ops::cumsum(log_forget(log_effect(activation(in, ctx), options_, ctx)), 2);  // [B, H, n]
    // The prefix sums continue from the newest cached position's c [B, H, 1], kept in this gate's
    // slot (not per row: eviction may drop the newest row).
    Tensor& last = cache.gate_state[kKind];  // undefined at the first position (KVCache::clear empties it)
    if (last.defined()) c = c + last;
    last = ops::slice(c, 2, c.size(2) - 1, c.size(2));
    add_cache_rows(cache.col_bias, cache, ops::neg(c), pos);
    accumulate(terms.row_bias, c);
  }

  // −c_j, key j's column bias, is lowest for the oldest key (the decay only grows with age).
  bool ranks_keys() const override { return true; }

  double prune_threshold() const override { return prune_threshold_; }

  Tensor weight, bias;  // [U, C], [U]: U = the gated heads / groups

 private:
  GateActivation activation(const AttentionInputs& in, const AttentionContext& ctx) const {
    return activate_gate(ops::linear(gate_input_norm(in.h, options_), weight, bias), gate_, options_, ctx);
  }
  // log g [B, H, T] (0, no forgetting, on heads without the gate).
  Tensor log_forget(const GateEffect& e) const {
    return ops::transpose(expand_to_heads(e.log_value, units_, 1, 0.0), 1, 2);
  }
  GateConfig gate_;
  GateOptions options_;
  HeadUnits units_;
  double prune_threshold_;
};

std::int64_t forget_units(const ModelConfig& m, const GateConfig& g) {
  return head_units(m.n_head, GateOptions::of(g)).units;
}

}  // namespace

GATTN_GATE_KIND(forget) {
  GateKindSpec s;
  s.name = kKind;
  s.summary = "S_ij += c_i − c_j, c_i = Σ_{l≤i} log σ(f_ln), f = h·Wᵀ + b";
  s.reference = "Lin et al. 2025, Forgetting Transformer: Softmax Attention with a Forget Gate";
  s.common_keys = {"activation", "temperature", "init_bias", "init_weight", "init_std"};
  // σ(3) ≈ 0.95: little forgetting until it is learned, as the Forgetting Transformer starts.
  s.default_init_bias = 3.0;
  s.options = shared_gate_options({"temperature_final", "temperature_steps", "hard", "hard_threshold", "groups",
                                   "heads", "input_norm", "dropout", "ramp_start", "ramp_steps"});
  s.options.push_back(gate_option(
      config::num_key("prune_threshold", 0.0,
                      "θ of adaptive computation pruning: key tiles whose attention probabilities are provably < θ "
                      "are skipped, forward and backward (0 = off)")
          .at_least(0)
          .below(1),
      [](const nlohmann::json& v, const std::string& key, const GateConfig& g, const ModelConfig& model) {
        if (!v.is_number() || !(v.get<double>() >= 0.0 && v.get<double>() < 1.0))
          throw ValueError(key + ": must be a number in [0, 1), got " + v.dump());
        // The bound needs each query's own key visible: a causal attention.
        if (v.get<double>() > 0.0 && g.site != kSiteSelf)
          throw ValueError(key + ": needs a causal attention (where: self), got where: " + g.site);
        // It also needs the attention weights at most P: a softplus pair gate's modulation exceeds 1.
        if (v.get<double>() > 0.0)
          for (const GateConfig& other : model.gate_entries())
            if (other.kind == "pair" && other.activation == "softplus")
              for (std::int64_t layer = 0; layer < model.n_layer; ++layer)
                if (g.applies_to(layer) && other.applies_to(layer))
                  throw ValueError(key + ": needs attention weights at most softmax's, but " + other.where +
                                   " (pair, softplus) can raise them on layer " + std::to_string(layer));
      }));
  s.gate_values = "σ(f): one value per token and gated head (or group)";
  s.parameter_doc = "`weight` [U, C], `bias` [U] (U = H/groups over the gated heads; bias default 3: σ ≈ 0.95)";
  s.order = 30;
  s.stage = GateStage::scores;
  s.parameters = [](const ModelConfig& m, const GateConfig& g) {
    const std::int64_t u = forget_units(m, g);
    return std::vector<GateParameterSpec>{{"weight", {u, m.n_embd}}, {"bias", {u}}};
  };
  s.make = [](const ModelConfig& m, const GateConfig& g, Generator& init) {
    return std::make_shared<ForgetGate>(m, g, init);
  };
  s.multiply_adds = [](const ModelConfig& m, const GateConfig& g) {
    return static_cast<double>(forget_units(m, g) * m.n_embd);
  };
  return s;
}

}  // namespace gattn::models
