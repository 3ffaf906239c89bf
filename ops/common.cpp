// Argument checks shared by the op functions.
#include "ops/common.h"

namespace gattn::ops {

void check_floating(const Tensor& t, const char* op) {
  if (!t.defined()) throw ValueError(std::string(op) + ": undefined tensor argument");
  if (t.dtype() != DType::f32 && t.dtype() != DType::f64)
    throw DTypeError(std::string(op) + ": expected an f32 or f64 tensor, got " + t.str());
  check_cpu(t, op);
}

void check_floating_any_device(const Tensor& t, const char* op) {
  if (!t.defined()) throw ValueError(std::string(op) + ": undefined tensor argument");
  if (t.device() == Device::cpu) {
    check_floating(t, op);
    return;
  }
  if (t.dtype() != DType::f32) {
    std::string msg = op;
    msg += ": the CUDA kernels take f32 tensors, got ";
    msg += t.str();
    msg += " on cuda";
    throw DTypeError(msg);
  }
}

Device common_device(const char* op, const std::vector<Tensor>& tensors) {
  const Tensor* first = nullptr;
  for (const Tensor& t : tensors) {
    if (!t.defined()) continue;
    if (!first) {
      first = &t;
    } else if (t.device() != first->device()) {
      std::string msg = op;
      msg += ": operands on different devices: ";
      msg += first->str();
      msg += " on ";
      msg += device_name(first->device());
      msg += " and ";
      msg += t.str();
      msg += " on ";
      msg += device_name(t.device());
      throw DeviceError(msg);
    }
  }
  return first ? first->device() : Device::cpu;
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
    throw ValueError(std::string(op) + ": axis " + std::to_string(axis) + " out of range for rank " +
                     std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

}  // namespace gattn::ops
