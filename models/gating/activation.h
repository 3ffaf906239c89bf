// What the gate kinds share besides the hooks: the gate activation (`activation`: sigmoid, or
// gumbel_sigmoid with logistic noise and a temperature while training and σ(z/τ) in eval), the
// reporting of gate values, and the initialisation of gate parameters. The activation keeps the
// logit u with g = σ(u) so the gate-entropy regulariser and log σ terms are computed stably from u,
// never from a rounded g.
#pragma once
#include "framework/tensor/random.h"
#include "framework/tensor/tensor.h"
#include "models/attention.h"
#include "models/config.h"
#include "models/kv_cache.h"
#include "models/regularizers.h"

namespace gattn::models {

struct GateActivation {
  Tensor logit;  // u: z (sigmoid), (z + n)/τ (gumbel, training), z/τ (gumbel, eval)
  Tensor value;  // g = σ(u)
};

// Applies the entry's activation to pre-activations z. gumbel_sigmoid in training draws the noise
// from ctx.noise (ValueError when it is null).
GateActivation activate_gate(const Tensor& z, const GateConfig& gate, const AttentionContext& ctx);

// The temperature the activation divides by (1 for sigmoid), and whether it adds noise now.
double gate_temperature(const GateConfig& gate);
bool gate_noise_active(const GateConfig& gate, const AttentionContext& ctx);

// Reports gate values to the layer: their moments into ctx.stats (when collecting), Σ h(g) with
// its count into the gate-entropy regulariser (when asked), the values into ctx.inspect (when
// inspecting; `token_axis` is the positions' axis of gate.value, whose axis 0 is the batch).
void report_gate(const GateActivation& gate, AttentionContext& ctx, std::int64_t token_axis = 1);

// A gate weight: normal(0, 0.02) or zero per the entry's init_weight (draws from init either way,
// so the generator advances the same for both choices).
Tensor init_gate_weight(const Shape& shape, const ModelConfig& model, const GateConfig& gate, Generator& init);
// A gate bias filled with the entry's init_bias (null: the kind's registered default).
Tensor init_gate_bias(const Shape& shape, const ModelConfig& model, const GateConfig& gate);

// slot[:, :, pos … pos+n−1] += src [B, H, n], allocating slot [B, H, capacity] as zeros on first use:
// several gates add their per-key terms to one cached column bias.
void add_cache_rows(Tensor& slot, const LayerKVCache& cache, const Tensor& src, std::int64_t pos);

}  // namespace gattn::models
