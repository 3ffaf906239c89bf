// Cumulative sum along an axis (autograd-aware): y_i = Σ_{l ≤ i} x_l. Backward is the reverse
// cumulative sum: dx_l = Σ_{i ≥ l} g_i. Used by the forget gate's c_i = Σ_{l ≤ i} log σ(f_l).
#pragma once
#include "core/tensor/tensor.h"

namespace gattn::ops {

Tensor cumsum(const Tensor& x, std::int64_t axis);

}  // namespace gattn::ops
