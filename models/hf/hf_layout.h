// The exact rearrangements between gattn's and transformers' tensor layouts (f32, row-major, no
// arithmetic), shared by the import (hf_tensors.cpp) and the export (hf_export_tensors.cpp) so the
// two directions are the same code read both ways.
#pragma once
#include <cstdint>
#include <vector>

#include "core/tensor/tensor.h"

namespace gattn::models::hf_layout {

// The transpose of a matrix: GPT-2's Conv1D stores [in, out], gattn's Linear [out, in].
Tensor transposed(const Tensor& t);
// Rows [first, first + count) of a matrix (elements of a vector).
Tensor rows(const Tensor& t, std::int64_t first, std::int64_t count);
// The parts one after the other along the first dimension.
Tensor stacked(const std::vector<Tensor>& parts);

}  // namespace gattn::models::hf_layout
