// Gate kind `input` ([GateAttn-Guide] §4.3's ablation, "Gate作用于Attention的输入特征"; docs/gates.md#references): a
// sigmoid gate on the block's normalised input before attn.qkv, so q, k and v are projected from
// h ⊙ σ(h·Wᵀ + b) instead of h. The gates that read h (score, forget, output, the router) still
// read the ungated h.
#include "models/gating/activation.h"
#include "models/gating/gate.h"
#include "models/gating/options.h"
#include "models/gating/registry.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"

namespace gattn::models {

namespace {

class InputGate : public Gate {
 public:
  InputGate(const ModelConfig& model, const GateConfig& gate, Generator& init)
      : gate_(gate), options_(GateOptions::of(gate)) {
    weight = register_parameter("weight", init_gate_weight({model.n_embd, model.n_embd}, model, gate, init));
    bias = register_parameter("bias", init_gate_bias({model.n_embd}, model, gate));
    if (has_magnitude_projection(gate)) {
      magnitude_weight =
          register_parameter("magnitude_weight", init_gate_weight({model.n_embd, model.n_embd}, model, gate, init));
      magnitude_bias = register_parameter("magnitude_bias", init_gate_bias({model.n_embd}, model, gate));
    }
  }

  Tensor gate_input(const AttentionInputs& in, const Tensor& x, AttentionContext& ctx) override {
    const Tensor h = gate_input_norm(in.h, options_);
    const Tensor z_magnitude = magnitude_weight.defined() ? ops::linear(h, magnitude_weight, magnitude_bias) : Tensor();
    GateEffect e = value_effect(activate_gate(ops::linear(h, weight, bias), gate_, options_, ctx, z_magnitude),
                                options_, ctx);  // [B, T, C]
    report_gate(e, ctx);
    return x * e.value;
  }

  Tensor weight, bias;                      // [C, C], [C]
  Tensor magnitude_weight, magnitude_bias;  // the same, with tanh_magnitude only

 private:
  GateConfig gate_;
  GateOptions options_;
};

}  // namespace

GATTN_GATE_KIND(input) {
  GateKindSpec s;
  s.name = "input";
  s.summary = "before attn.qkv: q, k, v are computed from h ⊙ g, g = act(h·Wᵀ + b), instead of h";
  s.reference = "[GateAttn-Guide] §4.3, the ablation groups (Gate作用于Attention的输入特征)";
  s.common_keys = {"activation", "temperature", "init_bias", "init_weight", "init_std"};
  s.activations = {"sigmoid", "gumbel_sigmoid", "softplus", "tanh_magnitude"};
  s.options = shared_gate_options({"temperature_final", "temperature_steps", "hard", "hard_threshold", "input_norm",
                                   "dropout", "ramp_start", "ramp_steps"});
  s.gate_values = "g = act(h·Wᵀ + b): C values per token";
  s.parameter_doc = "`weight` [C, C], `bias` [C]; tanh_magnitude adds `magnitude_weight` [C, C], `magnitude_bias` [C]";
  s.sites = {kSiteSelf, kSiteEncoder, kSiteCross};
  s.order = 10;
  s.stage = GateStage::h;
  s.parameters = [](const ModelConfig& m, const GateConfig& g) {
    std::vector<GateParameterSpec> p{{"weight", {m.n_embd, m.n_embd}}, {"bias", {m.n_embd}}};
    if (has_magnitude_projection(g)) {
      p.push_back({"magnitude_weight", {m.n_embd, m.n_embd}});
      p.push_back({"magnitude_bias", {m.n_embd}});
    }
    return p;
  };
  s.make = [](const ModelConfig& m, const GateConfig& g, Generator& init) {
    return std::make_shared<InputGate>(m, g, init);
  };
  s.multiply_adds = [](const ModelConfig& m, const GateConfig& g) {
    return static_cast<double>(m.n_embd * m.n_embd * (has_magnitude_projection(g) ? 2 : 1));
  };
  return s;
}

}  // namespace gattn::models
