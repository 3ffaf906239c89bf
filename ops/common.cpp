// Argument checks shared by the op functions.
#include "ops/common.h"

namespace gattn::ops {

void check_floating(const Tensor& t, const char* op) {
  if (!t.defined()) throw ValueError(std::string(op) + ": undefined tensor argument");
  if (t.dtype() != DType::f32 && t.dtype() != DType::f64)
    throw DTypeError(std::string(op) + ": expected an f32 or f64 tensor, got " + t.str());
  check_cpu(t, op);
}

void check_same_dtype(const Tensor& a, const Tensor& b, const char* op) {
  if (a.dtype() != b.dtype())
    throw DTypeError(std::string(op) + ": dtype mismatch between " + a.str() + " and " + b.str());
}

void check_cpu(const Tensor& t, const char* op) {
  if (t.device() != Device::cpu) throw DeviceError(std::string(op) + ": no CUDA kernel yet for " + t.str());
}

std::int64_t normalize_axis(std::int64_t axis, std::int64_t rank, const char* op) {
  if (axis < -rank || axis >= rank || (rank == 0 && axis != 0 && axis != -1))
    throw ValueError(std::string(op) + ": axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

}  // namespace gattn::ops
