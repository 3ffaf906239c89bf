// Gate kind `forget` (Lin et al. 2025, "Forgetting Transformer: Softmax Attention with a Forget
// Gate"): S_ij += c_i − c_j with c_i = Σ_{l≤i} log σ(f_ln), so key j is down-weighted by the forget
// gates between j and i. The fused op gets c as a row bias and −c as a column bias: O(T) memory, no
// T×T decay matrix.
#include "models/gating/activation.h"
#include "models/gating/gate.h"
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
  ForgetGate(const ModelConfig& model, const GateConfig& gate, Generator& init) : gate_(gate) {
    weight = register_parameter("weight", init_gate_weight({model.n_head, model.n_embd}, model, gate, init));
    bias = register_parameter("bias", init_gate_bias({model.n_head}, model, gate));
  }

  void add_terms(const AttentionInputs& in, ops::AttentionTerms& terms, AttentionContext& ctx) override {
    GateActivation g = activate_gate(ops::linear(in.h, weight, bias), gate_, ctx);  // [B, T, H]
    report_gate(g, ctx);
    Tensor c = ops::cumsum(log_forget(g), 2);  // [B, H, T]
    accumulate(terms.row_bias, c);
    accumulate(terms.col_bias, ops::neg(c));
  }

  void add_cached_terms(const AttentionInputs& in, LayerKVCache& cache, std::int64_t pos,
                        ops::CachedAttentionInputs& terms) override {
    AttentionContext eval;
    Tensor c = ops::cumsum(log_forget(activate_gate(ops::linear(in.h, weight, bias), gate_, eval)), 2);  // [B, H, n]
    // The prefix sums continue from the last cached position's c, kept in this gate's slot.
    Tensor& cached = cache_term(cache.gate_state[kKind], cache);
    if (pos > 0) c = c + ops::slice(cached, 2, pos - 1, pos);
    write_cache_rows(cached, c, pos);
    add_cache_rows(cache.col_bias, cache, ops::neg(c), pos);
    accumulate(terms.row_bias, c);
  }

  Tensor weight, bias;  // [H, C], [H]

 private:
  // log σ(u) [B, H, T] from the logit.
  static Tensor log_forget(const GateActivation& g) { return ops::transpose(ops::log_sigmoid(g.logit), 1, 2); }
  GateConfig gate_;
};

}  // namespace

GATTN_GATE_KIND(forget) {
  GateKindSpec s;
  s.name = kKind;
  s.summary = "S_ij += c_i − c_j, c_i = Σ_{l≤i} log σ(f_ln), f = h·Wᵀ + b";
  s.reference = "Lin et al. 2025, Forgetting Transformer: Softmax Attention with a Forget Gate";
  s.common_keys = {"activation", "temperature", "init_bias", "init_weight", "init_std"};
  // σ(3) ≈ 0.95: little forgetting until it is learned, as the Forgetting Transformer starts.
  s.default_init_bias = 3.0;
  s.gate_values = "σ(f): H values per token";
  s.parameter_doc = "`weight` [H, C], `bias` [H] (bias default 3: σ ≈ 0.95)";
  s.order = 30;
  s.parameters = [](const ModelConfig& m, const GateConfig&) {
    return std::vector<GateParameterSpec>{{"weight", {m.n_head, m.n_embd}}, {"bias", {m.n_head}}};
  };
  s.make = [](const ModelConfig& m, const GateConfig& g, Generator& init) {
    return std::make_shared<ForgetGate>(m, g, init);
  };
  s.multiply_adds = [](const ModelConfig& m, const GateConfig&) { return static_cast<double>(m.n_head * m.n_embd); };
  return s;
}

}  // namespace gattn::models
