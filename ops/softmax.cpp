// softmax and log_softmax over the last axis (autograd-aware); kernels in ops/cpu/softmax.h.
// Backward, from the saved output y and the output gradient g, per row:
//   softmax:     dx = y ⊙ (g − Σ_j g_j y_j)      (J = diag(y) − y yᵀ, symmetric)
//   log_softmax: dx = g − exp(y) Σ_j g_j          (J = I − 1 softmax(x)ᵀ, so Jᵀg = g − softmax(x) Σ g)
#include "ops/cpu/softmax.h"

#include "ops/common.h"
#include "ops/nn_functional.h"
#ifdef GATTN_WITH_CUDA
#include "ops/cuda/host_util.h"
#include "ops/cuda/softmax.h"
#endif

namespace gattn::ops {

namespace {

// Rows of the last axis: the op needs at least one dimension to normalise over.
std::int64_t last_axis_or_throw(const Tensor& x, const char* op) {
  if (x.dim() == 0) throw ShapeError(std::string(op) + ": needs at least one dimension, got the scalar " + x.str());
  return x.size(-1);
}

enum class Kind { softmax, log_softmax };

Tensor backward_rows(const Tensor& y, const Tensor& g_in, Kind kind) {
  Tensor g = g_in.to(y.dtype());
  Tensor dx = Tensor::empty(y.shape(), y.dtype(), y.device());
  const std::int64_t C = y.size(-1);
  const std::int64_t rows = C ? y.numel() / C : 0;
#ifdef GATTN_WITH_CUDA
  if (y.device() == Device::cuda) {
    common_device("softmax backward", {y, g});
    const auto* py = static_cast<const float*>(y.raw_data());
    const auto* pg = static_cast<const float*>(g.raw_data());
    auto* pd = static_cast<float*>(dx.raw_data());
    if (kind == Kind::softmax)
      cuda::softmax_backward_f32(py, pg, pd, rows, C, cuda::stream());
    else
      cuda::log_softmax_backward_f32(py, pg, pd, rows, C, cuda::stream());
    return dx;
  }
#endif
  dispatch_float(y.dtype(), "softmax backward", [&]<class T>() {
    if (kind == Kind::softmax)
      cpu::softmax_backward(y.data<T>(), g.data<T>(), dx.data<T>(), rows, C);
    else
      cpu::log_softmax_backward(y.data<T>(), g.data<T>(), dx.data<T>(), rows, C);
  });
  return dx;
}

Tensor forward(const Tensor& x, Kind kind, const char* op) {
  check_floating_any_device(x, op);
  const std::int64_t C = last_axis_or_throw(x, op);
  const std::int64_t rows = C ? x.numel() / C : 0;
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
#ifdef GATTN_WITH_CUDA
  if (x.device() == Device::cuda) {
    const auto* px = static_cast<const float*>(x.raw_data());
    auto* py = static_cast<float*>(y.raw_data());
    if (kind == Kind::softmax)
      cuda::softmax_forward_f32(px, py, rows, C, cuda::stream());
    else
      cuda::log_softmax_forward_f32(px, py, rows, C, cuda::stream());
  } else
#endif
    dispatch_float(x.dtype(), op, [&]<class T>() {
      if (kind == Kind::softmax)
        cpu::softmax_forward(x.data<T>(), y.data<T>(), rows, C);
      else
        cpu::log_softmax_forward(x.data<T>(), y.data<T>(), rows, C);
    });
  // The backward needs only the output; capturing it detached avoids a cycle through its own node.
  return autograd::record(op, y, {x}, [y = y.detach(), kind](const Tensor& g, const std::vector<bool>&) {
    return std::vector<Tensor>{backward_rows(y, g, kind)};
  });
}

}  // namespace

Tensor softmax(const Tensor& x) { return forward(x, Kind::softmax, "softmax"); }

Tensor log_softmax(const Tensor& x) { return forward(x, Kind::log_softmax, "log_softmax"); }

}  // namespace gattn::ops
