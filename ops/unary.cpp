// Elementwise functions: argument checks, the forward kernel, and the recorded backward. The math
// of each function and its derivative sits with its kernel struct in ops/cpu/unary.h:
//   exp: g·y   log: g/x   tanh: g·(1−y²)   sigmoid: g·y(1−y)   log_sigmoid: g·σ(−x)
//   relu: g·[x>0]   gelu: g·(½(1+t) + ½x(1−t²)·c(1+3a x²)), t = tanh(c(x + a x³))
//   square: 2g·x   sqrt: g/(2y)
#include "ops/unary.h"

#include "ops/common.h"
#include "ops/cpu/unary.h"

namespace gattn::ops {

namespace {

// Runs Fn forward over x and records the backward, which saves x or y (detached) as Fn needs.
template <class Fn>
Tensor unary_op(const Tensor& x, const char* op) {
  check_floating(x, op);
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  const std::int64_t n = x.numel();
  dispatch_float(x.dtype(), op, [&]<class T>() { cpu::unary_forward<Fn>(x.data<T>(), out.data<T>(), n); });
  Tensor saved = Fn::kSavesOutput ? out.detach() : x.detach();
  return autograd::record(op, out, {x}, [saved, op](const Tensor& g_in, const std::vector<bool>&) {
    // The engine hands gradients in the output's dtype; convert anything else rather than misread it.
    Tensor g = g_in.dtype() == saved.dtype() ? g_in : g_in.to(saved.dtype());
    if (g.shape() != saved.shape())
      throw ShapeError(std::string(op) + " backward: gradient " + shape_str(g.shape()) + " for an output of shape " +
                       shape_str(saved.shape()));
    Tensor dx = Tensor::empty(saved.shape(), saved.dtype());
    dispatch_float(saved.dtype(), op,
                   [&]<class T>() { cpu::unary_backward<Fn>(g.data<T>(), saved.data<T>(), dx.data<T>(), saved.numel()); });
    return std::vector<Tensor>{dx};
  });
}

}  // namespace

Tensor exp(const Tensor& x) { return unary_op<cpu::ExpFn>(x, "exp"); }
Tensor log(const Tensor& x) { return unary_op<cpu::LogFn>(x, "log"); }
Tensor tanh(const Tensor& x) { return unary_op<cpu::TanhFn>(x, "tanh"); }
Tensor sigmoid(const Tensor& x) { return unary_op<cpu::SigmoidFn>(x, "sigmoid"); }
Tensor log_sigmoid(const Tensor& x) { return unary_op<cpu::LogSigmoidFn>(x, "log_sigmoid"); }
Tensor relu(const Tensor& x) { return unary_op<cpu::ReluFn>(x, "relu"); }
Tensor gelu(const Tensor& x) { return unary_op<cpu::GeluFn>(x, "gelu"); }
Tensor square(const Tensor& x) { return unary_op<cpu::SquareFn>(x, "square"); }
Tensor sqrt(const Tensor& x) { return unary_op<cpu::SqrtFn>(x, "sqrt"); }

}  // namespace gattn::ops
