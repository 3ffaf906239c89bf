// The gate activation of SPEC §4 (`model.gate.activation`): sigmoid, or gumbel_sigmoid (logistic
// noise and a temperature while training, σ(z/τ) in eval). Keeps the logit u with g = σ(u) so the
// gate-entropy regulariser and log σ terms are computed stably from u, never from a rounded g.
#pragma once
#include "framework/tensor/tensor.h"
#include "models/attention.h"
#include "models/config.h"

namespace gattn::models {

struct GateActivation {
  Tensor logit;  // u: z (sigmoid), (z + n)/τ (gumbel, training), z/τ (gumbel, eval)
  Tensor value;  // g = σ(u)
};

// Applies the configured activation to pre-activations z. gumbel_sigmoid in training draws the
// noise from ctx.noise (ValueError when it is null).
GateActivation activate_gate(const Tensor& z, const GateConfig& config, const AttentionContext& ctx);

// The temperature the activation divides by (1 for sigmoid), and whether it adds noise now.
double gate_temperature(const GateConfig& config);
bool gate_noise_active(const GateConfig& config, const AttentionContext& ctx);

// Reports gate values to the layer: their moments into ctx.stats (when collecting), Σ h(g) with
// its count into the gate-entropy sum (when asked), the values into ctx.inspect (when inspecting;
// `token_axis` is the positions' axis of gate.value, whose axis 0 is the batch).
void report_gate(const GateActivation& gate, AttentionContext& ctx, std::int64_t token_axis = 1);

}  // namespace gattn::models
