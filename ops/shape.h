// Shape ops (autograd-aware). reshape is a view (shares storage); the others copy, since tensors
// are always contiguous. Backward: reshape ↔ reshape back; transpose/permute ↔ inverse permutation;
// slice ↔ scatter into zeros; concat ↔ slices of g; split = several slices.
#pragma once
#include <vector>

#include "core/tensor/tensor.h"

namespace gattn::ops {

// One dimension may be -1 (inferred).
Tensor reshape(const Tensor& x, const Shape& shape);
Tensor transpose(const Tensor& x, std::int64_t dim0, std::int64_t dim1);
Tensor permute(const Tensor& x, const std::vector<std::int64_t>& dims);
// Elements [start, end) along `axis`.
Tensor slice(const Tensor& x, std::int64_t axis, std::int64_t start, std::int64_t end);
// Pieces of the given sizes along `axis` (sizes must add up to the axis length).
std::vector<Tensor> split(const Tensor& x, const std::vector<std::int64_t>& sizes, std::int64_t axis);
// The attention's heads: x [B, T, pieces·n_head·d] (the q, k, v projections side by side) as
// `pieces` tensors [B, n_head, T, d]. On the CPU one op and one pass each way (split, reshape and
// permute per piece would copy twice); elsewhere that composition.
std::vector<Tensor> split_heads(const Tensor& x, std::int64_t pieces, std::int64_t n_head);
// n equal pieces along `axis`.
std::vector<Tensor> chunk(const Tensor& x, std::int64_t n, std::int64_t axis);
Tensor concat(const std::vector<Tensor>& xs, std::int64_t axis);
Tensor unsqueeze(const Tensor& x, std::int64_t axis);
Tensor squeeze(const Tensor& x, std::int64_t axis);

}  // namespace gattn::ops
