// Gate kind `score` (the first paradigm of "Gated Attention: three paradigms", the seed article):
// S_ij += log σ(f_jn), f = h·Wᵀ + b, a learned soft mask on keys that the fused op adds to the
// logits as a column bias.
#include "models/gating/activation.h"
#include "models/gating/gate.h"
#include "models/gating/registry.h"
#include "ops/matmul.h"
#include "ops/shape.h"
#include "ops/unary.h"

namespace gattn::models {

namespace {

class ScoreGate : public Gate {
 public:
  ScoreGate(const ModelConfig& model, const GateConfig& gate, Generator& init) : gate_(gate) {
    weight = register_parameter("weight", init_gate_weight({model.n_head, model.n_embd}, model, gate, init));
    bias = register_parameter("bias", init_gate_bias({model.n_head}, model, gate));
  }

  void add_terms(const AttentionInputs& in, ops::AttentionTerms& terms, AttentionContext& ctx) override {
    GateActivation g = activate_gate(ops::linear(in.h, weight, bias), gate_, ctx);  // [B, T, H]
    report_gate(g, ctx);
    accumulate(terms.col_bias, key_term(g));
  }

  void add_cached_terms(const AttentionInputs& in, LayerKVCache& cache, std::int64_t pos,
                        ops::CachedAttentionInputs&) override {
    AttentionContext eval;
    add_cache_rows(cache.col_bias, cache, key_term(activate_gate(ops::linear(in.h, weight, bias), gate_, eval)), pos);
  }

  Tensor weight, bias;  // [H, C], [H]

 private:
  // log σ(u) per key [B, H, T], from the logit (exact where σ(u) would round to 0).
  static Tensor key_term(const GateActivation& g) { return ops::transpose(ops::log_sigmoid(g.logit), 1, 2); }
  GateConfig gate_;
};

}  // namespace

GATTN_GATE_KIND(score) {
  GateKindSpec s;
  s.name = "score";
  s.summary = "S_ij += log σ(f_jn), f = h·Wᵀ + b: a learned soft mask on keys";
  s.reference = "the Gate+Attention article's first paradigm (Gate做Attention的软开关)";
  s.common_keys = {"activation", "temperature", "init_bias", "init_weight", "init_std"};
  s.gate_values = "σ(f): H values per token (one per key and head)";
  s.parameter_doc = "`weight` [H, C], `bias` [H]";
  s.order = 20;
  s.parameters = [](const ModelConfig& m, const GateConfig&) {
    return std::vector<GateParameterSpec>{{"weight", {m.n_head, m.n_embd}}, {"bias", {m.n_head}}};
  };
  s.make = [](const ModelConfig& m, const GateConfig& g, Generator& init) {
    return std::make_shared<ScoreGate>(m, g, init);
  };
  s.multiply_adds = [](const ModelConfig& m, const GateConfig&) { return static_cast<double>(m.n_head * m.n_embd); };
  return s;
}

}  // namespace gattn::models
