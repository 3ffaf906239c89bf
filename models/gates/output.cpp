// Gate kind `output` (Qiu et al. 2025, "Gated Attention for Large Language Models", G1): a gate on
// the attention output before attn.proj, y_n ← y_n ⊙ g_n with g = act(h·Wᵀ + b), elementwise (d
// values per head) or headwise (one per head); G heads may share one gate (groups), and heads
// left out of `heads` pass ungated. With activation tanh_magnitude, g = tanh(h·Wᵀ + b)·σ(h·Vᵀ + c).
#include "models/gating/activation.h"
#include "models/gating/gate.h"
#include "models/gating/options.h"
#include "models/gating/registry.h"
#include "ops/elementwise.h"
#include "ops/glu.h"
#include "ops/matmul.h"
#include "ops/shape.h"
#include "ops/unary.h"

namespace gattn::models {

namespace {

bool headwise(const GateConfig& gate) { return gate.string_option("granularity") == "headwise"; }

// Rows of W (and b): w values per unit (d elementwise, 1 headwise), one unit per gated head or group.
std::int64_t gate_width(const ModelConfig& model, const GateConfig& gate) {
  return headwise(gate) ? 1 : model.head_dim();
}
std::int64_t gate_rows(const ModelConfig& model, const GateConfig& gate) {
  return head_units(model.n_head, GateOptions::of(gate)).units * gate_width(model, gate);
}

class OutputGate : public Gate {
 public:
  OutputGate(const ModelConfig& model, const GateConfig& gate, Generator& init)
      : gate_(gate),
        options_(GateOptions::of(gate)),
        units_(head_units(model.n_head, options_)),
        n_head_(model.n_head),
        head_dim_(model.head_dim()),
        width_(gate_width(model, gate)) {
    const std::int64_t rows = units_.units * width_;
    weight = register_parameter("weight", init_gate_weight({rows, model.n_embd}, model, gate, init));
    if (gate.option("bias").get<bool>()) bias = register_parameter("bias", init_gate_bias({rows}, model, gate));
    if (has_magnitude_projection(gate)) {
      magnitude_weight =
          register_parameter("magnitude_weight", init_gate_weight({rows, model.n_embd}, model, gate, init));
      magnitude_bias = register_parameter("magnitude_bias", init_gate_bias({rows}, model, gate));
    }
  }

  Tensor gate_output(const AttentionInputs& in, const Tensor& y, AttentionContext& ctx) override {
    if (fused_sigmoid(ctx)) return fused_gate_output(in, y, ctx);
    GateEffect e = effect(in, ctx);  // [B, T, U·w]; y, h: [B, T, C]
    const std::int64_t B = y.size(0), T = y.size(1);
    GateEffect shown = e;
    shown.reported = ops::reshape(e.reported, {B, T, units_.units, width_});
    report_gate(shown, ctx, {1, 2, &units_});
    const Tensor g = expand_to_heads(e.value, units_, width_, 1.0);  // [B, T, H·w]
    if (width_ == head_dim_) return y * g;
    // One gate per head: broadcast over the head's d columns.
    Tensor out = ops::reshape(y, {B, T, n_head_, head_dim_}) * ops::reshape(g, {B, T, n_head_, 1});
    return ops::reshape(out, {B, T, n_head_ * head_dim_});
  }

  // Headwise, the gate scales each head's output y_n by one value: --skip-heads-below may skip y_n.
  bool gates_whole_heads() const override { return width_ == 1; }
  Tensor head_gate(const AttentionInputs& in, const AttentionContext& ctx) const override {
    if (width_ != 1) return Tensor();
    return ops::transpose(expand_to_heads(effect(in, ctx).value, units_, 1, 1.0), 1, 2);  // [B, H, T]
  }

  Tensor weight, bias;                      // [U·w, C], [U·w] (bias undefined with bias: false)
  Tensor magnitude_weight, magnitude_bias;  // the same, with tanh_magnitude only

 private:
  // The plain elementwise σ gate on every head is y ⊙ σ(u), one fused op each way (ops::glu_sigmoid:
  // one pass forward instead of σ then ⊙, one backward pass instead of two) with the same bits as
  // the composed σ then ⊙. The gate L1 regulariser needs σ(u) with its gradient, so it composes.
  bool fused_sigmoid(const AttentionContext& ctx) const {
    return is_sigmoid_family(gate_.activation) && width_ == head_dim_ && units_.one_per_head() && !options_.hard &&
           (options_.dropout == 0.0 || !ctx.training) && options_.ramp_at(ctx.step) == 1.0 && !ctx.wants(kGateL1);
  }
  Tensor fused_gate_output(const AttentionInputs& in, const Tensor& y, AttentionContext& ctx) const {
    const Tensor u = activation_input(ops::linear(gate_input_norm(in.h, options_), weight, bias), gate_, options_, ctx);
    GateEffect e;  // what report_gate reads: the logit (entropy) and, when statistics are taken, σ(u)
    e.soft.logit = u;
    if ((ctx.collect_stats && ctx.stats) || ctx.inspect) {
      const std::int64_t B = y.size(0), T = y.size(1);
      e.reported = ops::reshape(ops::sigmoid(u.detach()), {B, T, units_.units, width_});
    }
    report_gate(e, ctx, {1, 2, &units_});
    return ops::glu_sigmoid(u, y);
  }

  // The gate's effective values [B, T, U·w] from h.
  GateEffect effect(const AttentionInputs& in, const AttentionContext& ctx) const {
    const Tensor x = gate_input_norm(in.h, options_);
    const Tensor z_magnitude = magnitude_weight.defined() ? ops::linear(x, magnitude_weight, magnitude_bias) : Tensor();
    return value_effect(activate_gate(ops::linear(x, weight, bias), gate_, options_, ctx, z_magnitude), options_, ctx);
  }

  GateConfig gate_;
  GateOptions options_;
  HeadUnits units_;
  std::int64_t n_head_, head_dim_, width_;
};

}  // namespace

GATTN_GATE_KIND(output) {
  GateKindSpec s;
  s.name = "output";
  s.summary =
      "after attention, before attn.proj: y_n ← y_n ⊙ g_n, g = act(h·Wᵀ + b) (tanh_magnitude: "
      "tanh(h·Wᵀ + b)·σ(h·Vᵀ + c))";
  s.reference = "Qiu et al. 2025, Gated Attention for Large Language Models (G1)";
  s.common_keys = {"activation", "temperature", "init_bias", "init_weight", "init_std"};
  s.activations = {"sigmoid", "gumbel_sigmoid", "softplus", "tanh_magnitude"};
  s.options = {choice_option("granularity", "elementwise", {"elementwise", "headwise"},
                             "elementwise: d gate values per head; headwise: one per head")};
  for (GateOptionSpec& o :
       shared_gate_options({"temperature_final", "temperature_steps", "hard", "hard_threshold", "groups", "heads",
                            "bias", "input_norm", "dropout", "ramp_start", "ramp_steps"}))
    s.options.push_back(std::move(o));
  s.gate_values = "g: d (elementwise) or 1 (headwise) values per token and gated head (or group)";
  s.parameter_doc =
      "`weight` [U·d or U, C], `bias` [U·d or U] (not with `bias: false`; U = H/groups over the gated heads); "
      "tanh_magnitude adds "
      "`magnitude_weight`, `magnitude_bias` of the same shapes";
  s.sites = {kSiteSelf, kSiteEncoder, kSiteCross};
  s.order = 70;
  s.stage = GateStage::y;
  s.parameters = [](const ModelConfig& m, const GateConfig& g) {
    const std::int64_t rows = gate_rows(m, g);
    std::vector<GateParameterSpec> p{{"weight", {rows, m.n_embd}}};
    if (g.option("bias").get<bool>()) p.push_back({"bias", {rows}});
    if (has_magnitude_projection(g)) {
      p.push_back({"magnitude_weight", {rows, m.n_embd}});
      p.push_back({"magnitude_bias", {rows}});
    }
    return p;
  };
  s.make = [](const ModelConfig& m, const GateConfig& g, Generator& init) {
    return std::make_shared<OutputGate>(m, g, init);
  };
  // Qwen3-Next's (and Qwen3.5's) attention output gate: o_proj(y ⊙ σ(h·W_gᵀ)), W_g the gate rows of q_proj.
  s.equivalents["qwen3_next_output_gate"] = {{"granularity", "elementwise"}, {"bias", false}};
  // One value per head is that gate with the d rows of each head equal (gattn export writes the row d times).
  s.equivalents["qwen3_next_output_gate_per_head"] = {{"granularity", "headwise"}, {"bias", false}};
  s.multiply_adds = [](const ModelConfig& m, const GateConfig& g) {
    return static_cast<double>(gate_rows(m, g) * m.n_embd * (has_magnitude_projection(g) ? 2 : 1));
  };
  return s;
}

}  // namespace gattn::models
