#include "core/autograd/gradient_sum.h"

#include <cstdint>
#include <string>

#include "core/cuda/device_elements.h"
#include "core/tensor/error.h"

namespace gattn::autograd {

namespace {

// Loops below this many elements stay on one thread: a parallel region's fork/join costs more.
constexpr std::int64_t kParallelElements = 1 << 15;

void check_operands(const Tensor& a, const Tensor& b, const char* what) {
  if (a.device() != b.device())
    throw DeviceError(std::string(what) + ": gradients on different devices: " + a.str() + " on " +
                      device_name(a.device()) + " and " + b.str() + " on " + device_name(b.device()));
  if (a.dtype() != b.dtype())
    throw DTypeError(std::string(what) + ": dtype mismatch between " + a.str() + " and " + b.str());
  if (a.dtype() != DType::f32 && a.dtype() != DType::f64)
    throw DTypeError(std::string(what) + ": expected floating gradients (f32 or f64), got " + dtype_name(a.dtype()));
  if (a.shape() != b.shape())
    throw ShapeError(std::string(what) + ": gradient shapes " + shape_str(a.shape()) + " and " + shape_str(b.shape()) +
                     " differ");
}

template <class T>
void add_on_host(T* dst, const T* a, const T* b, std::int64_t n) {
#pragma omp parallel for schedule(static) if (n >= kParallelElements)
  for (std::int64_t i = 0; i < n; ++i) dst[i] = a[i] + b[i];
}

// dst = a + b, all three checked alike (dst may be a).
void add_elements(Tensor& dst, const Tensor& a, const Tensor& b) {
  const std::int64_t n = a.numel();
  if (n == 0) return;
  if (a.device() == Device::cuda) {
    cuda::add_device_elements(dst.raw_data(), a.raw_data(), b.raw_data(), a.dtype(), static_cast<std::size_t>(n));
  } else if (a.dtype() == DType::f32) {
    add_on_host(dst.data<float>(), a.data<float>(), b.data<float>(), n);
  } else {
    add_on_host(dst.data<double>(), a.data<double>(), b.data<double>(), n);
  }
}

}  // namespace

Tensor sum_gradients(const Tensor& a, const Tensor& b, const char* what) {
  check_operands(a, b, what);
  Tensor out = Tensor::empty(a.shape(), a.dtype(), a.device());
  add_elements(out, a, b);
  return out;
}

void add_gradient_into(Tensor& acc, const Tensor& g, const char* what) {
  check_operands(acc, g, what);
  add_elements(acc, acc, g);
}

}  // namespace gattn::autograd
