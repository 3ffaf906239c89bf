// Reductions (autograd-aware): sums and means over all elements or over chosen axes.
#pragma once
#include <vector>

#include "core/tensor/tensor.h"

namespace gattn::ops {

// Sum of all elements: a tensor of shape [].
Tensor sum(const Tensor& x);
// Sum over `axes` (negative counts from the end, each at most once); keepdim leaves size-1 dims.
Tensor sum(const Tensor& x, const std::vector<std::int64_t>& axes, bool keepdim = false);
Tensor mean(const Tensor& x);
Tensor mean(const Tensor& x, const std::vector<std::int64_t>& axes, bool keepdim = false);
// Max over the last axis (no gradient is needed by gattn; values only, no history).
Tensor amax_last(const Tensor& x);
// True when every element of t is finite (integer tensors always are; no history). A CUDA tensor is
// checked on the device: one reduction and one sync.
bool all_finite(const Tensor& t);

}  // namespace gattn::ops
