// sigmoid / gumbel_sigmoid gate activation and the reporting of gate values.
#include "models/gates/activation.h"

#include "models/inspection.h"
#include "models/regularizers.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/unary.h"

namespace gattn::models {

double gate_temperature(const GateConfig& config) {
  return config.activation == "gumbel_sigmoid" ? config.temperature : 1.0;
}

bool gate_noise_active(const GateConfig& config, const AttentionContext& ctx) {
  return config.activation == "gumbel_sigmoid" && ctx.training;
}

GateActivation activate_gate(const Tensor& z, const GateConfig& config, const AttentionContext& ctx) {
  GateActivation out;
  Tensor u = z;
  if (gate_noise_active(config, ctx)) {
    if (!ctx.noise)
      throw ValueError(
          "model.gate.activation: gumbel_sigmoid needs a noise generator while training (AttentionContext.noise)");
    // Drawn on the host (the Philox stream of the CPU), then placed beside z.
    Tensor noise = Tensor::empty(z.shape(), z.dtype());
    ctx.noise->logistic_(noise);
    u = z + noise.to(z.device());
  }
  const double tau = gate_temperature(config);
  if (tau != 1.0) u = ops::mul_scalar(u, 1.0 / tau);
  out.logit = u;
  out.value = ops::sigmoid(u);
  return out;
}

void report_gate(const GateActivation& gate, AttentionContext& ctx, std::int64_t token_axis) {
  if (ctx.collect_stats && ctx.stats) add_gate_moments(ctx.stats->gate, gate.value);
  if (ctx.inspect) inspect_gate_values(gate.value.detach(), token_axis, *ctx.inspect);
  if (ctx.gate_entropy) {
    accumulate(ctx.gate_entropy_sum, ops::sum(binary_entropy_from_logit(gate.logit)));
    ctx.gate_entropy_count += static_cast<double>(gate.value.numel());
  }
}

}  // namespace gattn::models
