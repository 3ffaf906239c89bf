// Shared argument checks for op functions: one clear message naming the op and the operands.
#pragma once
#include <string>

#include "framework/autograd/node.h"
#include "framework/tensor/tensor.h"

namespace gattn::ops {

// Throws DTypeError unless `t` is f32 or f64 (the CPU compute types).
void check_floating(const Tensor& t, const char* op);
// Throws DTypeError unless a and b have the same dtype, naming both tensors.
void check_same_dtype(const Tensor& a, const Tensor& b, const char* op);
// Throws DeviceError unless every tensor is on the CPU (the CUDA paths arrive with their issue).
void check_cpu(const Tensor& t, const char* op);
// Normalises a possibly negative axis for a tensor of rank `rank`; throws ValueError naming op.
std::int64_t normalize_axis(std::int64_t axis, std::int64_t rank, const char* op);

}  // namespace gattn::ops
