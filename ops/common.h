// Shared argument checks for op functions: one clear message naming the op and the operands.
#pragma once
#include <string>
#include <vector>

#include "core/autograd/node.h"
#include "core/tensor/tensor.h"

namespace gattn::ops {

// Throws DTypeError unless `t` is f32 or f64 (the CPU compute types).
void check_floating(const Tensor& t, const char* op);
// Throws DTypeError unless a and b have the same dtype, naming both tensors.
void check_same_dtype(const Tensor& a, const Tensor& b, const char* op);
// Throws DeviceError unless every tensor is on the CPU (for ops and operands without a CUDA path).
void check_cpu(const Tensor& t, const char* op);
// For ops with a CUDA path: f32/f64 on the CPU, f32 on CUDA (the CUDA kernels compute in f32;
// f64 stays a CPU gradcheck type). Throws DTypeError naming the op otherwise.
void check_floating_any_device(const Tensor& t, const char* op);
// The one device all defined tensors are on; throws DeviceError naming the op and two tensors that
// disagree. Undefined tensors (absent optional operands) are skipped; none defined means the CPU.
Device common_device(const char* op, const std::vector<Tensor>& tensors);
// Normalises a possibly negative axis for a tensor of rank `rank`; throws ValueError naming op.
std::int64_t normalize_axis(std::int64_t axis, std::int64_t rank, const char* op);

}  // namespace gattn::ops
