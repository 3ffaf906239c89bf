// The differentiable regularisers (docs/config.md) and their bookkeeping: binary entropy of gates from
// their logits, running sums over layers (undefined = 0), and the Switch-Transformer balance loss.
#pragma once
#include <cstdint>

#include "core/tensor/tensor.h"
#include "ops/attention/attention.h"

namespace gattn::models {

// h(σ(u)) = −σ(u)·log σ(u) − σ(−u)·log σ(−u), elementwise; stable for any finite u (no log of 0).
Tensor binary_entropy_from_logit(const Tensor& u);

// sum += term, where an undefined sum counts as 0.
void accumulate(Tensor& sum, const Tensor& term);

// Adds the moments of every value of g (no gradient) to m.
void add_gate_moments(ops::GateMoments& m, const Tensor& g);

// Switch Transformer load balance: E · Σ_e f_e · P_e, with probs r [..., E] the router softmax,
// selected [..., E] a 0/1 mask of each token's top_k experts, f_e the fraction of the (token, slot)
// assignments that went to e (a constant) and P_e the mean of r_e over tokens (differentiable).
// Equals 1 when routing is perfectly uniform.
Tensor switch_balance_loss(const Tensor& probs, const Tensor& selected, std::int64_t top_k);

}  // namespace gattn::models
