// Gate kind `context` (the second paradigm of the Gate+Attention article, "解码端调制上下文向量"): a
// gate from the head's query and attention output, interpolating between them:
// y_n ← g ⊙ y_n + (1 − g) ⊙ q_n, g = σ([q_n ; y_n]·Wᵀ + b), with W [d, 2d] shared by the heads.
#include "models/gating/activation.h"
#include "models/gating/gate.h"
#include "models/gating/registry.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/shape.h"

namespace gattn::models {

namespace {

class ContextGate : public Gate {
 public:
  ContextGate(const ModelConfig& model, const GateConfig& gate, Generator& init) : gate_(gate) {
    const std::int64_t d = model.head_dim();
    weight = register_parameter("weight", init_gate_weight({d, 2 * d}, model, gate, init));
    bias = register_parameter("bias", init_gate_bias({d}, model, gate));
  }

  Tensor gate_heads(const AttentionInputs& in, const Tensor& y, AttentionContext& ctx) override {
    GateActivation g = activate_gate(ops::linear(ops::concat({in.q, y}, 3), weight, bias), gate_, ctx);
    report_gate(g, ctx, 2);  // g: [B, H, T, d]
    // g ⊙ y + (1 − g) ⊙ q written as q + g ⊙ (y − q): one product instead of two.
    return in.q + g.value * (y - in.q);
  }

  Tensor weight, bias;  // [d, 2d], [d]

 private:
  GateConfig gate_;
};

}  // namespace

GATTN_GATE_KIND(context) {
  GateKindSpec s;
  s.name = "context";
  s.summary = "g = σ([q_n ; y_n]·Wᵀ + b), y_n ← g ⊙ y_n + (1−g) ⊙ q_n, W shared by the heads";
  s.reference = "the Gate+Attention article's second paradigm (解码端调制上下文向量)";
  s.common_keys = {"activation", "temperature", "init_bias", "init_weight", "init_std"};
  s.gate_values = "g: H·d values per token";
  s.parameter_doc = "`weight` [d, 2d], `bias` [d]";
  s.order = 60;
  s.parameters = [](const ModelConfig& m, const GateConfig&) {
    const std::int64_t d = m.head_dim();
    return std::vector<GateParameterSpec>{{"weight", {d, 2 * d}}, {"bias", {d}}};
  };
  s.make = [](const ModelConfig& m, const GateConfig& g, Generator& init) {
    return std::make_shared<ContextGate>(m, g, init);
  };
  // [q; y]·Wᵀ per head: W is shared, so it counts once per head.
  s.multiply_adds = [](const ModelConfig& m, const GateConfig&) {
    return static_cast<double>(m.n_head * 2 * m.head_dim() * m.head_dim());
  };
  return s;
}

}  // namespace gattn::models
