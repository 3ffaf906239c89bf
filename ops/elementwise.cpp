// Broadcasting arithmetic. Backward of each, with g the output gradient and Σ the sum back over
// broadcast dimensions: d(a+b) = (Σg, Σg); d(a-b) = (Σg, -Σg); d(a*b) = (Σ g·b, Σ g·a);
// d(a/b) = (Σ g/b, -Σ g·a/b²).
#include "ops/elementwise.h"

#include "core/autograd/grad_mode.h"
#include "ops/broadcast.h"
#include "ops/common.h"
#include "ops/cpu/binary.h"
#include "ops/op_codes.h"
#include "ops/reduce.h"
#ifdef GATTN_WITH_CUDA
#include "ops/cuda/elementwise.h"
#include "ops/cuda/host_util.h"
#endif

namespace gattn::ops {

namespace {

#ifdef GATTN_WITH_CUDA
float* fptr(const Tensor& t) { return static_cast<float*>(t.raw_data()); }
#endif

Tensor binary_forward(const Tensor& a, const Tensor& b, BinaryOp kind, const char* op) {
  const Device device = common_device(op, {a, b});
  check_floating_any_device(a, op);
  check_floating_any_device(b, op);
  check_same_dtype(a, b, op);
  Shape out_shape = broadcast_shape(a.shape(), b.shape(), op);
  Tensor out = Tensor::empty(out_shape, a.dtype(), device);
  BroadcastPlan plan = make_broadcast_plan(a.shape(), b.shape(), out_shape);
  if (plan.numel == 0) return out;
#ifdef GATTN_WITH_CUDA
  if (device == Device::cuda) {
    cuda::broadcast_binary_f32(kind, cuda::to_strided_index(plan, op), plan.numel, fptr(a), fptr(b), fptr(out),
                               cuda::stream());
    return out;
  }
#endif
  dispatch_float(a.dtype(), op, [&]<class T>() {
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* po = out.data<T>();
    switch (kind) {
      case BinaryOp::add:
        cpu::broadcast_binary(plan, pa, pb, po, [](T x, T y) { return x + y; });
        break;
      case BinaryOp::sub:
        cpu::broadcast_binary(plan, pa, pb, po, [](T x, T y) { return x - y; });
        break;
      case BinaryOp::mul:
        cpu::broadcast_binary(plan, pa, pb, po, [](T x, T y) { return x * y; });
        break;
      case BinaryOp::div:
        cpu::broadcast_binary(plan, pa, pb, po, [](T x, T y) { return x / y; });
        break;
    }
  });
  return out;
}

}  // namespace

Tensor sum_to(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  if (broadcast_shape(shape, g.shape(), "sum_to") != g.shape())
    throw ShapeError("sum_to: " + shape_str(shape) + " does not broadcast to " + shape_str(g.shape()));
  if (g.device() == Device::cuda) {
    // The dims g was broadcast along (left padding included) are summed by the reduction kernels.
    check_floating_any_device(g, "sum_to");
    const std::size_t pad = g.shape().size() - shape.size();
    std::vector<std::int64_t> axes;
    for (std::size_t d = 0; d < g.shape().size(); ++d)
      if (d < pad || (shape[d - pad] == 1 && g.shape()[d] != 1)) axes.push_back(static_cast<std::int64_t>(d));
    autograd::NoGradGuard no_grad;
    return sum(g.detach(), axes, false).alias(shape);
  }
  Tensor out = Tensor::empty(shape, g.dtype());
  dispatch_float(g.dtype(), "sum_to",
                 [&]<class T>() { cpu::sum_to_shape(g.data<T>(), g.shape(), out.data<T>(), shape); });
  return out;
}

Tensor add(const Tensor& a, const Tensor& b) {
  Tensor out = binary_forward(a, b, BinaryOp::add, "add");
  return autograd::record(
      "add", out, {a, b}, [sa = a.shape(), sb = b.shape()](const Tensor& g, const std::vector<bool>& needs) {
        return std::vector<Tensor>{needs[0] ? sum_to(g, sa) : Tensor(), needs[1] ? sum_to(g, sb) : Tensor()};
      });
}

Tensor sub(const Tensor& a, const Tensor& b) {
  Tensor out = binary_forward(a, b, BinaryOp::sub, "sub");
  return autograd::record(
      "sub", out, {a, b}, [sa = a.shape(), sb = b.shape()](const Tensor& g, const std::vector<bool>& needs) {
        return std::vector<Tensor>{needs[0] ? sum_to(g, sa) : Tensor(), needs[1] ? sum_to(neg(g), sb) : Tensor()};
      });
}

Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor out = binary_forward(a, b, BinaryOp::mul, "mul");
  return autograd::record("mul", out, {a, b},
                          [a = a.detach(), b = b.detach()](const Tensor& g, const std::vector<bool>& needs) {
                            return std::vector<Tensor>{needs[0] ? sum_to(mul(g, b), a.shape()) : Tensor(),
                                                       needs[1] ? sum_to(mul(g, a), b.shape()) : Tensor()};
                          });
}

Tensor div(const Tensor& a, const Tensor& b) {
  Tensor out = binary_forward(a, b, BinaryOp::div, "div");
  return autograd::record(
      "div", out, {a, b},
      [a = a.detach(), b = b.detach(), out = out.detach()](const Tensor& g, const std::vector<bool>& needs) {
        Tensor g_over_b = div(g, b);
        return std::vector<Tensor>{needs[0] ? sum_to(g_over_b, a.shape()) : Tensor(),
                                   needs[1] ? sum_to(neg(mul(g_over_b, out)), b.shape()) : Tensor()};
      });
}

Tensor neg(const Tensor& a) { return mul_scalar(a, -1.0); }

Tensor mul_scalar(const Tensor& a, double s) {
  check_floating_any_device(a, "mul_scalar");
  Tensor out = Tensor::empty(a.shape(), a.dtype(), a.device());
#ifdef GATTN_WITH_CUDA
  if (a.device() == Device::cuda)
    cuda::affine_f32(fptr(a), fptr(out), a.numel(), static_cast<float>(s), 0.0f, cuda::stream());
  else
#endif
    dispatch_float(a.dtype(), "mul_scalar", [&]<class T>() {
      const T* pa = a.data<T>();
      T* po = out.data<T>();
      const T v = static_cast<T>(s);
      const std::int64_t n = a.numel();
#pragma omp parallel for schedule(static) if (cpu::worth_parallel(n))
      for (std::int64_t i = 0; i < n; ++i) po[i] = pa[i] * v;
    });
  return autograd::record("mul_scalar", out, {a}, [s](const Tensor& g, const std::vector<bool>&) {
    return std::vector<Tensor>{mul_scalar(g, s)};
  });
}

Tensor add_scalar(const Tensor& a, double s) {
  check_floating_any_device(a, "add_scalar");
  Tensor out = Tensor::empty(a.shape(), a.dtype(), a.device());
#ifdef GATTN_WITH_CUDA
  if (a.device() == Device::cuda)
    cuda::affine_f32(fptr(a), fptr(out), a.numel(), 1.0f, static_cast<float>(s), cuda::stream());
  else
#endif
    dispatch_float(a.dtype(), "add_scalar", [&]<class T>() {
      const T* pa = a.data<T>();
      T* po = out.data<T>();
      const T v = static_cast<T>(s);
      const std::int64_t n = a.numel();
#pragma omp parallel for schedule(static) if (cpu::worth_parallel(n))
      for (std::int64_t i = 0; i < n; ++i) po[i] = pa[i] + v;
    });
  return autograd::record("add_scalar", out, {a},
                          [](const Tensor& g, const std::vector<bool>&) { return std::vector<Tensor>{g}; });
}

void add_(Tensor& a, const Tensor& b) {
  const Device device = common_device("add_", {a, b});
  check_floating_any_device(a, "add_");
  check_floating_any_device(b, "add_");
  check_same_dtype(a, b, "add_");
  if (broadcast_shape(a.shape(), b.shape(), "add_") != a.shape())
    throw ShapeError("add_: " + shape_str(b.shape()) + " does not broadcast to the destination " +
                     shape_str(a.shape()));
  BroadcastPlan plan = make_broadcast_plan(a.shape(), b.shape(), a.shape());
  if (plan.numel == 0) return;
#ifdef GATTN_WITH_CUDA
  if (device == Device::cuda) {
    cuda::broadcast_binary_f32(cuda::BinaryOp::add, cuda::to_strided_index(plan, "add_"), plan.numel, fptr(a), fptr(b),
                               fptr(a), cuda::stream());
    return;
  }
#else
  (void)device;
#endif
  dispatch_float(a.dtype(), "add_", [&]<class T>() {
    T* pa = a.data<T>();
    cpu::broadcast_binary(plan, pa, b.data<T>(), pa, [](T x, T y) { return x + y; });
  });
}

void axpy_(Tensor& a, double alpha, const Tensor& b) {
  const Device device = common_device("axpy_", {a, b});
  check_floating_any_device(a, "axpy_");
  check_floating_any_device(b, "axpy_");
  check_same_dtype(a, b, "axpy_");
  if (a.shape() != b.shape())
    throw ShapeError("axpy_: shapes " + shape_str(a.shape()) + " and " + shape_str(b.shape()) + " differ");
#ifdef GATTN_WITH_CUDA
  if (device == Device::cuda) {
    cuda::axpy_f32(fptr(a), static_cast<float>(alpha), fptr(b), a.numel(), cuda::stream());
    return;
  }
#else
  (void)device;
#endif
  dispatch_float(a.dtype(), "axpy_", [&]<class T>() {
    T* pa = a.data<T>();
    const T* pb = b.data<T>();
    const T al = static_cast<T>(alpha);
    const std::int64_t n = a.numel();
#pragma omp parallel for schedule(static) if (cpu::worth_parallel(n))
    for (std::int64_t i = 0; i < n; ++i) pa[i] += al * pb[i];
  });
}

void scale_(Tensor& a, double s) {
  check_floating_any_device(a, "scale_");
#ifdef GATTN_WITH_CUDA
  if (a.device() == Device::cuda) {
    cuda::affine_f32(fptr(a), fptr(a), a.numel(), static_cast<float>(s), 0.0f, cuda::stream());
    return;
  }
#endif
  dispatch_float(a.dtype(), "scale_", [&]<class T>() {
    T* pa = a.data<T>();
    const T v = static_cast<T>(s);
    const std::int64_t n = a.numel();
#pragma omp parallel for schedule(static) if (cpu::worth_parallel(n))
    for (std::int64_t i = 0; i < n; ++i) pa[i] *= v;
  });
}

}  // namespace gattn::ops
