// Gate kind `score` (the first paradigm, [GateAttn-Guide] §3.1 in docs/gates.md#references):
// a learned soft mask on keys from f = h·Wᵀ + b, one value per key and head (or per group of heads).
//   form additive (default):     S_ij += log g_j, which the fused op adds to the logits as a column
//                                bias (O(T) memory)
//   form multiplicative:         S_ij ← S_ij · g_j, [GateAttn-Guide]'s "score * gate", done as k_j ← g_j·k_j
//   source query_key (with multiplicative): S_ij ← S_ij · g_i · g_j (q_i ← g_i·q_i as well)
// A per-query additive term would shift a whole softmax row and change nothing, so query_key is
// multiplicative only. g is σ (or gumbel_sigmoid) or softplus: log softplus(u) ranges over all the
// reals, so an additive softplus gate can boost a key (g > 1) as well as mask it. On the
// cross-attention (where: cross) the gate reads the encoder output, one value per source position: a
// learned mask over the source (additive only).
#include "models/gating/activation.h"
#include "models/gating/gate.h"
#include "models/gating/options.h"
#include "models/gating/registry.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/shape.h"
#include "ops/unary.h"

namespace gattn::models {

namespace {

class ScoreGate : public Gate {
 public:
  ScoreGate(const ModelConfig& model, const GateConfig& gate, Generator& init)
      : gate_(gate),
        options_(GateOptions::of(gate)),
        units_(head_units(model.n_head, options_)),
        multiplicative_(gate.string_option("form") == "multiplicative"),
        query_too_(gate.string_option("source") == "query_key") {
    weight = register_parameter("weight", init_gate_weight({units_.units, model.n_embd}, model, gate, init));
    bias = register_parameter("bias", init_gate_bias({units_.units}, model, gate));
  }

  void gate_qk(AttentionInputs& in, AttentionContext& ctx) override {
    if (!multiplicative_) return;
    GateEffect e = value_effect(activation(in, ctx), options_, ctx);  // [B, T, U]
    report_gate(e, ctx, {1, 2, &units_});
    Tensor g = ops::unsqueeze(ops::transpose(expand_to_heads(e.value, units_, 1, 1.0), 1, 2), 3);  // [B, H, T, 1]
    in.k = in.k * g;
    if (query_too_) in.q = in.q * g;
  }

  void add_terms(const AttentionInputs& in, ops::AttentionTerms& terms, AttentionContext& ctx) override {
    if (multiplicative_) return;
    GateEffect e = log_effect(activation(in, ctx), options_, ctx);  // [B, T, U]
    report_gate(e, ctx, {1, 2, &units_});
    accumulate(terms.col_bias, key_term(e));
  }

  void add_cached_terms(const AttentionInputs& in, LayerKVCache& cache, std::int64_t pos, ops::CachedAttentionInputs&,
                        const AttentionContext& ctx) override {
    if (multiplicative_) return;  // gate_qk scaled the cached k
    add_cache_rows(cache.col_bias, cache, key_term(log_effect(activation(in, ctx), options_, ctx)), pos);
  }

  // log g_j lowers key j's logit for every later query; a multiplicative g_j does not rank keys.
  bool ranks_keys() const override { return !multiplicative_; }

  Tensor weight, bias;  // [U, C], [U]: U = the gated heads / groups

 private:
  GateActivation activation(const AttentionInputs& in, const AttentionContext& ctx) const {
    return activate_gate(ops::linear(gate_input_norm(in.key_source(), options_), weight, bias), gate_, options_, ctx);
  }
  // log g per key and head [B, H, T] (0 on heads without the gate).
  Tensor key_term(const GateEffect& e) const {
    return ops::transpose(expand_to_heads(e.log_value, units_, 1, 0.0), 1, 2);
  }
  GateConfig gate_;
  GateOptions options_;
  HeadUnits units_;
  bool multiplicative_, query_too_;
};

std::int64_t score_units(const ModelConfig& m, const GateConfig& g) {
  return head_units(m.n_head, GateOptions::of(g)).units;
}

}  // namespace

GATTN_GATE_KIND(score) {
  GateKindSpec s;
  s.name = "score";
  s.summary =
      "S_ij += log g_jn (form additive) or S_ij ← S_ij·g_jn (multiplicative; ·g_in too with source query_key), "
      "g = σ(h·Wᵀ + b) (activation softplus: g = softplus(h·Wᵀ + b) in (0, ∞), log g computed stably from the "
      "logit, so a key can be boosted as well as masked): a learned soft mask on keys";
  s.reference = "[GateAttn-Guide] §3.1, the first paradigm (Gate做Attention的软开关)";
  s.common_keys = {"activation", "temperature", "init_bias", "init_weight", "init_std"};
  s.activations = {"sigmoid", "gumbel_sigmoid", "softplus"};
  GateOptionSpec form = choice_option("form", "additive", {"additive", "multiplicative"},
                                      "additive: S + log g (a soft mask); multiplicative: S ⊙ g");
  GateOptionSpec source = choice_option("source", "key", {"key", "query_key"},
                                        "key: g of the key; query_key: g of the query and of the key "
                                        "(multiplicative only)");
  auto check_choice = source.check;
  source.check = [check_choice](const nlohmann::json& v, const std::string& key, const GateConfig& g,
                                const ModelConfig& m) {
    check_choice(v, key, g, m);
    if (g.site == kSiteCross && g.string_option("form") != "additive")
      throw ValueError(g.where +
                       ".form: a cross-attention score gate is additive only (a mask over the source's "
                       "positions, made once per source)");
    if (g.string_option("form") == "multiplicative" && m.kv_heads() != m.n_head)
      throw ValueError(g.where +
                       ".form: multiplicative scales each query head's keys, but with model.n_kv_head < n_head the "
                       "heads of a group share theirs; use form additive (the same gate as a log-mask)");
    if (v == "query_key" && g.string_option("form") != "multiplicative")
      throw ValueError(key +
                       ": query_key needs form: multiplicative (an additive per-query term shifts a whole "
                       "softmax row and changes nothing)");
  };
  s.options = {form, source};
  for (GateOptionSpec& o :
       shared_gate_options({"temperature_final", "temperature_steps", "hard", "hard_threshold", "groups", "heads",
                            "input_norm", "dropout", "ramp_start", "ramp_steps"}))
    s.options.push_back(std::move(o));
  s.gate_values = "g: one value per token and gated head (or group)";
  s.parameter_doc = "`weight` [U, C], `bias` [U] (U = H/groups over the gated heads)";
  s.sites = {kSiteSelf, kSiteEncoder, kSiteCross};
  s.order = 20;
  s.stage = GateStage::scores;
  s.stage_of = [](const GateConfig& g) {
    return g.string_option("form") == "multiplicative" ? GateStage::qk : GateStage::scores;
  };
  s.parameters = [](const ModelConfig& m, const GateConfig& g) {
    const std::int64_t u = score_units(m, g);
    return std::vector<GateParameterSpec>{{"weight", {u, m.n_embd}}, {"bias", {u}}};
  };
  s.make = [](const ModelConfig& m, const GateConfig& g, Generator& init) {
    return std::make_shared<ScoreGate>(m, g, init);
  };
  s.multiply_adds = [](const ModelConfig& m, const GateConfig& g) {
    return static_cast<double>(score_units(m, g) * m.n_embd);
  };
  return s;
}

}  // namespace gattn::models
