// The gate activation, the reporting of gate values and the gate parameters' initialisation.
#include "models/gating/activation.h"

#include "models/inspection.h"
#include "models/regularizers.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "ops/unary.h"

namespace gattn::models {

double gate_temperature(const GateConfig& gate) { return gate.activation == "gumbel_sigmoid" ? gate.temperature : 1.0; }

bool gate_noise_active(const GateConfig& gate, const AttentionContext& ctx) {
  return gate.activation == "gumbel_sigmoid" && ctx.training;
}

GateActivation activate_gate(const Tensor& z, const GateConfig& gate, const AttentionContext& ctx) {
  GateActivation out;
  Tensor u = z;
  if (gate_noise_active(gate, ctx)) {
    if (!ctx.noise)
      throw ValueError(gate.where +
                       ".activation: gumbel_sigmoid needs a noise generator while training (AttentionContext.noise)");
    // Drawn on the host (the Philox stream of the CPU), then placed beside z.
    Tensor noise = Tensor::empty(z.shape(), z.dtype());
    ctx.noise->logistic_(noise);
    u = z + noise.to(z.device());
  }
  const double tau = gate_temperature(gate);
  if (tau != 1.0) u = ops::mul_scalar(u, 1.0 / tau);
  out.logit = u;
  out.value = ops::sigmoid(u);
  return out;
}

void report_gate(const GateActivation& gate, AttentionContext& ctx, std::int64_t token_axis) {
  if (ctx.collect_stats && ctx.stats) add_gate_moments(ctx.stats->gate, gate.value);
  if (ctx.inspect) inspect_gate_values(gate.value.detach(), token_axis, *ctx.inspect);
  if (ctx.wants(kGateEntropy))
    ctx.add_regularizer(kGateEntropy, ops::sum(binary_entropy_from_logit(gate.logit)),
                        static_cast<double>(gate.value.numel()));
}

Tensor init_gate_weight(const Shape& shape, const ModelConfig& model, const GateConfig& gate, Generator& init) {
  Tensor w = Tensor::empty(shape, model.dtype);
  init.normal_(w, 0.0, gate.init_std);  // drawn even for zero weights: the stream's position stays put
  if (gate.init_weight == "zero") w.fill(0.0);
  return w;
}

Tensor init_gate_bias(const Shape& shape, const ModelConfig& model, const GateConfig& gate) {
  return Tensor::full(shape, gate.resolved_init_bias(), model.dtype);
}

void add_cache_rows(Tensor& slot, const LayerKVCache& cache, const Tensor& src, std::int64_t pos) {
  Tensor& dst = cache_term(slot, cache);
  const std::int64_t n = src.size(2);
  Tensor sum = ops::slice(dst, 2, pos, pos + n) + src;
  write_cache_rows(dst, sum, pos);
}

}  // namespace gattn::models
