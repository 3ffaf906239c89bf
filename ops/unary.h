// Elementwise functions (autograd-aware). Backward (g = output gradient, y = output):
// exp: g·y; log: g/x; tanh: g·(1−y²); sigmoid: g·y(1−y); log_sigmoid: g·σ(−x) = g·(1−σ(x));
// relu: g·[x>0]; gelu (tanh approximation, GPT-2): g·GELU'(x) (derivation in unary.cpp).
#pragma once
#include "core/tensor/tensor.h"

namespace gattn::ops {

Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
// log σ(x), computed stably for large |x| (never log of 0).
Tensor log_sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
// GELU with the tanh approximation: 0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³))).
Tensor gelu(const Tensor& x);
Tensor square(const Tensor& x);
Tensor sqrt(const Tensor& x);
// 1[x > 0] with a zero gradient: the forward of a hard threshold (models/gating uses it with a
// straight-through estimator, g + stop_gradient(1[g > θ] − g)).
Tensor heaviside(const Tensor& x);

}  // namespace gattn::ops
