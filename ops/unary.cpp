// Elementwise functions: argument checks, the forward kernel, and the recorded backward. The math
// of each function and its derivative sits with its kernel struct in ops/cpu/unary.h:
//   exp: g·y   log: g/x   tanh: g·(1−y²)   sigmoid: g·y(1−y)   log_sigmoid: g·σ(−x)
//   relu: g·[x>0]   gelu: g·(½(1+t) + ½x(1−t²)·c(1+3a x²)), t = tanh(c(x + a x³))
//   square: 2g·x   sqrt: g/(2y)   heaviside: 0
#include "ops/unary.h"

#include "ops/common.h"
#include "ops/cpu/unary.h"
#include "ops/op_codes.h"
#ifdef GATTN_WITH_CUDA
#include "ops/cuda/host_util.h"
#include "ops/cuda/unary.h"
#endif

namespace gattn::ops {

namespace {

// The CUDA twin of each CPU kernel struct (ops/cuda/unary.cu has the same formulas).

// Runs Fn forward over x (on x's device) and records the backward, which saves x or y (detached)
// as Fn needs.
template <class Fn>
Tensor unary_op(const Tensor& x, const char* op, [[maybe_unused]] UnaryOp cuda_op) {
  check_floating_any_device(x, op);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  const std::int64_t n = x.numel();
#ifdef GATTN_WITH_CUDA
  const UnaryOp kernel_op = cuda_op;
  if (x.device() == Device::cuda)
    cuda::unary_forward_f32(kernel_op, static_cast<const float*>(x.raw_data()), static_cast<float*>(out.raw_data()), n,
                            cuda::stream());
  else
#endif
    dispatch_float(x.dtype(), op, [&]<class T>() { cpu::unary_forward<Fn>(x.data<T>(), out.data<T>(), n); });
  Tensor saved = Fn::kSavesOutput ? out.detach() : x.detach();
  return autograd::record(op, out, {x}, [saved, op, cuda_op](const Tensor& g_in, const std::vector<bool>&) {
    // The engine hands gradients in the output's dtype; convert anything else rather than misread it.
    Tensor g = g_in.dtype() == saved.dtype() ? g_in : g_in.to(saved.dtype());
    if (g.shape() != saved.shape())
      throw ShapeError(std::string(op) + " backward: gradient " + shape_str(g.shape()) + " for an output of shape " +
                       shape_str(saved.shape()));
    common_device(op, {g, saved});
    Tensor dx = Tensor::empty(saved.shape(), saved.dtype(), saved.device());
#ifdef GATTN_WITH_CUDA
    if (saved.device() == Device::cuda) {
      cuda::unary_backward_f32(cuda_op, static_cast<const float*>(g.raw_data()),
                               static_cast<const float*>(saved.raw_data()), static_cast<float*>(dx.raw_data()),
                               saved.numel(), cuda::stream());
      return std::vector<Tensor>{dx};
    }
#endif
    dispatch_float(saved.dtype(), op, [&]<class T>() {
      cpu::unary_backward<Fn>(g.data<T>(), saved.data<T>(), dx.data<T>(), saved.numel());
    });
    return std::vector<Tensor>{dx};
  });
}

}  // namespace

Tensor exp(const Tensor& x) { return unary_op<cpu::ExpFn>(x, "exp", UnaryOp::exp); }
Tensor log(const Tensor& x) { return unary_op<cpu::LogFn>(x, "log", UnaryOp::log); }
Tensor tanh(const Tensor& x) { return unary_op<cpu::TanhFn>(x, "tanh", UnaryOp::tanh); }
Tensor sigmoid(const Tensor& x) { return unary_op<cpu::SigmoidFn>(x, "sigmoid", UnaryOp::sigmoid); }
Tensor log_sigmoid(const Tensor& x) { return unary_op<cpu::LogSigmoidFn>(x, "log_sigmoid", UnaryOp::log_sigmoid); }
Tensor relu(const Tensor& x) { return unary_op<cpu::ReluFn>(x, "relu", UnaryOp::relu); }
Tensor gelu(const Tensor& x) { return unary_op<cpu::GeluFn>(x, "gelu", UnaryOp::gelu); }
Tensor square(const Tensor& x) { return unary_op<cpu::SquareFn>(x, "square", UnaryOp::square); }
Tensor sqrt(const Tensor& x) { return unary_op<cpu::SqrtFn>(x, "sqrt", UnaryOp::sqrt); }
Tensor heaviside(const Tensor& x) { return unary_op<cpu::HeavisideFn>(x, "heaviside", UnaryOp::heaviside); }

}  // namespace gattn::ops
