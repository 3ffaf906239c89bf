// Gate kind `context` (the second paradigm, [GateAttn-Guide] §3.2 "解码端调制上下文向量"; docs/gates.md#references): a
// gate from the head's query and attention output, interpolating between them:
// y_n ← g ⊙ y_n + (1 − g) ⊙ q_n, g = act([q_n ; y_n]·Wᵀ + b), with W shared by the heads: a vector
// gate (granularity elementwise, W [d, 2d]) or a scalar one per head and position (headwise,
// W [1, 2d]), [GateAttn-Guide]'s "标量gate或向量gate". Heads left out of `heads` keep y_n.
//
// On the cross-attention of an encoder–decoder (where: cross) it is [GateAttn-Guide]'s decoder context
// gate at full model width: the decoder state s [B, T, C] and the cross-attention's output c (after
// cross.proj) give s ← g ⊙ c + (1 − g) ⊙ s, g = act([s ; c]·Wᵀ + b) with W [C, 2C] (elementwise) or
// [1, 2C] (headwise: one value per position), in place of the residual s + c.
#include "models/gating/activation.h"
#include "models/gating/gate.h"
#include "models/gating/options.h"
#include "models/gating/registry.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/shape.h"

namespace gattn::models {

namespace {

bool on_cross(const GateConfig& gate) { return gate.site == kSiteCross; }

// Rows of W: the values of one gate unit (a head's d, the model's C on the cross-attention, or 1).
std::int64_t gate_width(const ModelConfig& model, const GateConfig& gate) {
  if (gate.string_option("granularity") == "headwise") return 1;
  return on_cross(gate) ? model.n_embd : model.head_dim();
}
// Columns of W: what the gate reads, [q_n ; y_n] per head or [s ; c] on the cross-attention.
std::int64_t gate_inputs(const ModelConfig& model, const GateConfig& gate) {
  return 2 * (on_cross(gate) ? model.n_embd : model.head_dim());
}

class ContextGate : public Gate {
 public:
  ContextGate(const ModelConfig& model, const GateConfig& gate, Generator& init)
      : gate_(gate), options_(GateOptions::of(gate)), units_(head_units(model.n_head, options_)) {
    const std::int64_t w = gate_width(model, gate), n = gate_inputs(model, gate);
    weight = register_parameter("weight", init_gate_weight({w, n}, model, gate, init));
    bias = register_parameter("bias", init_gate_bias({w}, model, gate));
    if (has_magnitude_projection(gate)) {
      magnitude_weight = register_parameter("magnitude_weight", init_gate_weight({w, n}, model, gate, init));
      magnitude_bias = register_parameter("magnitude_bias", init_gate_bias({w}, model, gate));
    }
  }

  bool merges_state() const override { return on_cross(gate_); }

  Tensor merge_state(const AttentionInputs&, const Tensor& s, const Tensor& c, AttentionContext& ctx) override {
    const Tensor x = gate_input_norm(ops::concat({s, c}, 2), options_);  // [B, T, 2C]
    const Tensor z_magnitude = magnitude_weight.defined() ? ops::linear(x, magnitude_weight, magnitude_bias) : Tensor();
    GateEffect e = value_effect(activate_gate(ops::linear(x, weight, bias), gate_, options_, ctx, z_magnitude),
                                options_, ctx);  // [B, T, C or 1]
    report_gate(e, ctx);
    // g ⊙ c + (1 − g) ⊙ s written as s + g ⊙ (c − s).
    return s + e.value * (c - s);
  }

  Tensor gate_heads(const AttentionInputs& in, const Tensor& y_all, AttentionContext& ctx) override {
    if (on_cross(gate_)) return y_all;  // on the cross-attention the gate acts in merge_state
    const Tensor q = carried_heads(in.q, units_), y = carried_heads(y_all, units_);  // [B, H', T, d]
    const Tensor x = gate_input_norm(ops::concat({q, y}, 3), options_);
    const Tensor z_magnitude = magnitude_weight.defined() ? ops::linear(x, magnitude_weight, magnitude_bias) : Tensor();
    GateEffect e = value_effect(activate_gate(ops::linear(x, weight, bias), gate_, options_, ctx, z_magnitude),
                                options_, ctx);  // [B, H', T, d or 1]
    report_gate(e, ctx, {2, 1, &units_});
    // g ⊙ y + (1 − g) ⊙ q written as q + g ⊙ (y − q): one product instead of two.
    return with_carried_heads(y_all, q + e.value * (y - q), units_);
  }

  Tensor weight, bias;                      // [d or 1, 2d], [d or 1]; cross: [C or 1, 2C], [C or 1]
  Tensor magnitude_weight, magnitude_bias;  // the same, with tanh_magnitude only

 private:
  GateConfig gate_;
  GateOptions options_;
  HeadUnits units_;
};

}  // namespace

GATTN_GATE_KIND(context) {
  GateKindSpec s;
  s.name = "context";
  s.summary =
      "g = act([q_n ; y_n]·Wᵀ + b), y_n ← g ⊙ y_n + (1−g) ⊙ q_n, W shared by the heads; where cross: "
      "s ← g ⊙ c + (1−g) ⊙ s on the decoder state, g = act([s ; c]·Wᵀ + b)";
  s.reference = "[GateAttn-Guide] §3.2, the second paradigm (解码端调制上下文向量)";
  s.common_keys = {"activation", "temperature", "init_bias", "init_weight", "init_std"};
  s.activations = {"sigmoid", "gumbel_sigmoid", "softplus", "tanh_magnitude"};
  s.options = {choice_option("granularity", "elementwise", {"elementwise", "headwise"},
                             "elementwise: a vector gate (d values per head); headwise: a scalar gate per head")};
  for (GateOptionSpec& o : shared_gate_options({"temperature_final", "temperature_steps", "hard", "hard_threshold",
                                                "heads", "input_norm", "dropout", "ramp_start", "ramp_steps"})) {
    // The cross-attention's gate is on the whole decoder state, not per head.
    if (o.key == "heads")
      o.check = [inner = o.check](const nlohmann::json& v, const std::string& key, const GateConfig& g,
                                  const ModelConfig& m) {
        if (on_cross(g) && v != "all")
          throw ValueError(key + ": means nothing on the cross-attention (the gate is on the whole decoder state)");
        if (inner) inner(v, key, g, m);
      };
    s.options.push_back(std::move(o));
  }
  s.sites = {kSiteSelf, kSiteEncoder, kSiteCross};
  s.gate_values = "g: d (elementwise) or 1 (headwise) values per token and gated head";
  s.parameter_doc =
      "`weight` [d or 1, 2d], `bias` [d or 1] (where cross: [C or 1, 2C], [C or 1]); tanh_magnitude adds "
      "`magnitude_weight`, `magnitude_bias` of the same shapes";
  s.order = 60;
  s.stage = GateStage::y;
  // On the cross-attention it mixes the decoder state with cross.proj's output, in place of the residual.
  s.stage_of = [](const GateConfig& g) { return on_cross(g) ? GateStage::residual : GateStage::y; };
  s.parameters = [](const ModelConfig& m, const GateConfig& g) {
    const std::int64_t w = gate_width(m, g), n = gate_inputs(m, g);
    std::vector<GateParameterSpec> p{{"weight", {w, n}}, {"bias", {w}}};
    if (has_magnitude_projection(g)) {
      p.push_back({"magnitude_weight", {w, n}});
      p.push_back({"magnitude_bias", {w}});
    }
    return p;
  };
  s.make = [](const ModelConfig& m, const GateConfig& g, Generator& init) {
    return std::make_shared<ContextGate>(m, g, init);
  };
  // [q; y]·Wᵀ per gated head: W is shared, so it counts once per head.
  s.multiply_adds = [](const ModelConfig& m, const GateConfig& g) {
    const std::int64_t heads = on_cross(g) ? 1 : head_units(m.n_head, GateOptions::of(g)).units;
    return static_cast<double>(heads * gate_inputs(m, g) * gate_width(m, g) * (has_magnitude_projection(g) ? 2 : 1));
  };
  return s;
}

}  // namespace gattn::models
