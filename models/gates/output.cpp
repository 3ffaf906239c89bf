// Gate kind `output` (Qiu et al. 2025, "Gated Attention for Large Language Models", G1): a sigmoid
// gate on the attention output before attn.proj, y_n ← y_n ⊙ σ(h·Wᵀ + b)_n, elementwise (d values
// per head) or headwise (one per head).
#include "models/gating/activation.h"
#include "models/gating/gate.h"
#include "models/gating/registry.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/shape.h"

namespace gattn::models {

namespace {

bool headwise(const GateConfig& gate) { return gate.string_option("granularity") == "headwise"; }

// Rows of W (and b): one per channel, or one per head.
std::int64_t gate_rows(const ModelConfig& model, const GateConfig& gate) {
  return headwise(gate) ? model.n_head : model.n_embd;
}

class OutputGate : public Gate {
 public:
  OutputGate(const ModelConfig& model, const GateConfig& gate, Generator& init)
      : gate_(gate), n_head_(model.n_head), head_dim_(model.head_dim()), headwise_(headwise(gate)) {
    weight = register_parameter("weight", init_gate_weight({gate_rows(model, gate), model.n_embd}, model, gate, init));
    bias = register_parameter("bias", init_gate_bias({gate_rows(model, gate)}, model, gate));
  }

  Tensor gate_output(const AttentionInputs& in, const Tensor& y, AttentionContext& ctx) override {
    GateActivation g = activate_gate(ops::linear(in.h, weight, bias), gate_, ctx);  // y, h: [B, T, C]
    report_gate(g, ctx);
    if (!headwise_) return y * g.value;
    // One gate per head: broadcast over the head's d columns.
    const std::int64_t B = y.size(0), T = y.size(1);
    Tensor out = ops::reshape(y, {B, T, n_head_, head_dim_}) * ops::reshape(g.value, {B, T, n_head_, 1});
    return ops::reshape(out, {B, T, n_head_ * head_dim_});
  }

  Tensor weight, bias;  // [H·d or H, C], [H·d or H]

 private:
  GateConfig gate_;
  std::int64_t n_head_, head_dim_;
  bool headwise_;
};

}  // namespace

GATTN_GATE_KIND(output) {
  GateKindSpec s;
  s.name = "output";
  s.summary = "after attention, before attn.proj: y_n ← y_n ⊙ σ(h·Wᵀ + b)_n";
  s.reference = "Qiu et al. 2025, Gated Attention for Large Language Models (G1)";
  s.common_keys = {"activation", "temperature", "init_bias", "init_weight", "init_std"};
  s.options = {choice_option("granularity", "elementwise", {"elementwise", "headwise"},
                             "elementwise: d gate values per head; headwise: one per head")};
  s.gate_values = "σ(h·Wᵀ + b): H·d (elementwise) or H (headwise) values per token";
  s.parameter_doc = "`weight` [H·d or H, C], `bias` [H·d or H]";
  s.order = 70;
  s.parameters = [](const ModelConfig& m, const GateConfig& g) {
    return std::vector<GateParameterSpec>{{"weight", {gate_rows(m, g), m.n_embd}}, {"bias", {gate_rows(m, g)}}};
  };
  s.make = [](const ModelConfig& m, const GateConfig& g, Generator& init) {
    return std::make_shared<OutputGate>(m, g, init);
  };
  s.multiply_adds = [](const ModelConfig& m, const GateConfig& g) {
    return static_cast<double>(gate_rows(m, g) * m.n_embd);
  };
  return s;
}

}  // namespace gattn::models
