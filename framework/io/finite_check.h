// Finite values in what a checkpoint holds. The checksums prove that the bytes are the ones written,
// not that they are usable: weights or optimizer moments holding NaN or Inf give a `null` loss, text
// of one repeated token, or a resumed run that fails a step later with a message naming nothing.
// A checkpoint is refused when read (exit 3) and never written (exit 4) with such values.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "core/tensor/tensor.h"
#include "framework/io/safetensors.h"

namespace gattn {

// Throws CheckpointError naming the file and the first tensor of `file` holding NaN or Inf.
void check_finite_tensors(const SafetensorsFile& file);

// The name of the first of `tensors` holding NaN or Inf, or "" when all are finite.
std::string first_non_finite(const std::vector<std::pair<std::string, Tensor>>& tensors);

}  // namespace gattn
