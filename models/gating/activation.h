// What the gate kinds share besides the hooks: the gate activation, the shared options applied to
// its values (hard threshold, dropout, ramp), the reporting of gate values, and the initialisation
// of gate parameters.
//
// A gate value goes through these steps (docs/gates.md "Gate options" has the math):
//   z (the kind's pre-activation, from its input, LayerNorm'd with input_norm)
//   u = z/τ(step), or (z + n)/τ(step) with logistic noise n (gumbel_sigmoid while training)
//   g = σ(u) | softplus(u) | tanh(u)·σ(u')            (activation; u' from the second projection)
//   hard: g + stop_gradient(1[g > θ] − g)            (straight-through)
//   dropout (training): 1 where a Bernoulli(p) draw drops the connection
//   ramp: 1 − r(step)·(1 − g)
// The σ-family activations keep the logit u so log σ terms and the entropy regulariser are computed
// stably from u, never from a rounded g; softplus keeps its u for the same reason (log softplus(u)
// is about u where softplus(u) underflows).
#pragma once
#include <cstdint>

#include "core/tensor/random.h"
#include "core/tensor/tensor.h"
#include "models/attention.h"
#include "models/config.h"
#include "models/gating/options.h"
#include "models/kv_cache.h"
#include "models/regularizers.h"

namespace gattn::models {

struct GateActivation {
  Tensor logit;           // u, for the σ family (sigmoid, gumbel_sigmoid); undefined otherwise
  Tensor softplus_input;  // u, for softplus; undefined otherwise
  Tensor value;           // the soft gate g
};

// log softplus(u) = log log(1 + eᵘ), differentiable, finite for every finite u: exact for u ≥ −20,
// u − eᵘ/2 below (the next term, 5e²ᵘ/24, is under 1e−18 there), with the two branches fed clamped
// inputs so neither produces −∞ or NaN, forward or backward.
Tensor log_softplus(const Tensor& u);

// Whether the activation is σ-shaped (sigmoid, gumbel_sigmoid): a logit exists, log g is log σ(u).
bool is_sigmoid_family(const std::string& activation);
// Whether the entry's activation (tanh_magnitude) needs the second projection magnitude_weight/_bias.
inline bool has_magnitude_projection(const GateConfig& gate) { return gate.activation == "tanh_magnitude"; }

// The entry's activation at the context's step on pre-activations z (and z_magnitude, the second
// projection's, for tanh_magnitude). gumbel_sigmoid in training draws the noise from ctx.noise
// (ValueError when it is null).
GateActivation activate_gate(const Tensor& z, const GateConfig& gate, const GateOptions& options,
                             const AttentionContext& ctx, const Tensor& z_magnitude = Tensor());

// u, what the activation is taken of: z/τ(step), or (z + n)/τ(step) with the logistic noise of
// gumbel_sigmoid while training (drawn from ctx.noise; ValueError when it is null). activate_gate's
// first step; the output gate's fused σ(u) ⊙ y starts from it.
Tensor activation_input(const Tensor& z, const GateConfig& gate, const GateOptions& options,
                        const AttentionContext& ctx);

// Whether the activation adds noise now.
bool gate_noise_active(const GateConfig& gate, const AttentionContext& ctx);

// A gate's values after the shared options, and what it reports.
struct GateEffect {
  Tensor value;      // the value the kind multiplies by (value_effect), differentiable
  Tensor log_value;  // log of it (log_effect): the logit term of score and forget, differentiable
  Tensor reported;   // the effective values the statistics count (no gradient)
  GateActivation soft;
};

// hard → dropout → ramp on a multiplying gate's values.
GateEffect value_effect(const GateActivation& g, const GateOptions& options, const AttentionContext& ctx);
// The same for a gate that enters the logits as log g (σ family and softplus). A closed hard gate
// contributes max(log(1 − r), −30) rather than −∞, so a query whose keys are all closed keeps a
// defined softmax; with no hard, dropout or ramp this is exactly log σ(u) (log_softplus(u)).
GateEffect log_effect(const GateActivation& g, const GateOptions& options, const AttentionContext& ctx);

// Where a gate's values sit for the per-head statistics.
struct GateLayout {
  std::int64_t token_axis = 1;  // the positions' axis (axis 0 is the batch)
  std::int64_t unit_axis = -1;  // the axis indexing the gate's units (heads or groups); −1: none
  const HeadUnits* units = nullptr;
};

// Reports an effect to the layer: its values' moments into ctx.stats (and per head, when the layout
// has a unit axis), the soft gate's binary entropy (σ family) and mean (gate_l1) into the
// regularisers when asked, the values into ctx.inspect when inspecting.
void report_gate(const GateEffect& effect, AttentionContext& ctx, const GateLayout& layout = {});

// A gate weight: normal(0, init_std) or zero per the entry's init_weight (draws from init either
// way, so the generator advances the same for both choices).
Tensor init_gate_weight(const Shape& shape, const ModelConfig& model, const GateConfig& gate, Generator& init);
// A gate bias filled with the entry's init_bias (null: the kind's registered default).
Tensor init_gate_bias(const Shape& shape, const ModelConfig& model, const GateConfig& gate);

// LayerNorm without affine over the last axis when the options ask for it (input_norm), else x.
Tensor gate_input_norm(const Tensor& x, const GateOptions& options);

// slot[:, :, pos … pos+n−1] += src [B, H, n], allocating slot [B, H, capacity] as zeros on first use:
// several gates add their per-key terms to one cached column bias.
void add_cache_rows(Tensor& slot, const LayerKVCache& cache, const Tensor& src, std::int64_t pos);

}  // namespace gattn::models
