// Gate kind `input` (the Gate+Attention article's ablation, "Gate作用于Attention的输入特征"): a
// sigmoid gate on the block's normalised input before attn.qkv, so q, k and v are projected from
// h ⊙ σ(h·Wᵀ + b) instead of h. The gates that read h (score, forget, output, the router) still
// read the ungated h.
#include "models/gating/activation.h"
#include "models/gating/gate.h"
#include "models/gating/registry.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"

namespace gattn::models {

namespace {

class InputGate : public Gate {
 public:
  InputGate(const ModelConfig& model, const GateConfig& gate, Generator& init) : gate_(gate) {
    weight = register_parameter("weight", init_gate_weight({model.n_embd, model.n_embd}, model, gate, init));
    bias = register_parameter("bias", init_gate_bias({model.n_embd}, model, gate));
  }

  Tensor gate_input(const AttentionInputs& in, const Tensor& x, AttentionContext& ctx) override {
    GateActivation g = activate_gate(ops::linear(in.h, weight, bias), gate_, ctx);  // [B, T, C]
    report_gate(g, ctx);
    return x * g.value;
  }

  Tensor weight, bias;  // [C, C], [C]

 private:
  GateConfig gate_;
};

}  // namespace

GATTN_GATE_KIND(input) {
  GateKindSpec s;
  s.name = "input";
  s.summary = "before attn.qkv: q, k, v are computed from h ⊙ σ(h·Wᵀ + b) instead of h";
  s.reference = "the Gate+Attention article's ablation groups (Gate作用于Attention的输入特征)";
  s.common_keys = {"activation", "temperature", "init_bias", "init_weight", "init_std"};
  s.gate_values = "σ(h·Wᵀ + b): C values per token";
  s.parameter_doc = "`weight` [C, C], `bias` [C]";
  s.order = 10;
  s.parameters = [](const ModelConfig& m, const GateConfig&) {
    return std::vector<GateParameterSpec>{{"weight", {m.n_embd, m.n_embd}}, {"bias", {m.n_embd}}};
  };
  s.make = [](const ModelConfig& m, const GateConfig& g, Generator& init) {
    return std::make_shared<InputGate>(m, g, init);
  };
  s.multiply_adds = [](const ModelConfig& m, const GateConfig&) { return static_cast<double>(m.n_embd * m.n_embd); };
  return s;
}

}  // namespace gattn::models
