// rms_norm over the last axis (autograd-aware), fused: the forward saves 1/rms per row, the backward
// produces dx and dweight in one pass over the rows (ops/cpu/rms_norm.h, ops/cuda/rms_norm.cu).
// Backward math, with x̂ = x · rstd, s = w (or 1 + w with offset) and ĝ = g ⊙ s per row of C:
//   dx = rstd · (ĝ − x̂ · mean(ĝ ⊙ x̂)),  dweight = Σ_rows g ⊙ x̂.
#include "ops/cpu/rms_norm.h"

#include <cmath>

#include "ops/common.h"
#include "ops/nn_functional.h"
#ifdef GATTN_WITH_CUDA
#include "ops/cuda/host_util.h"
#include "ops/cuda/rms_norm.h"
#endif

namespace gattn::ops {

Tensor rms_norm(const Tensor& x, const Tensor& weight, double eps, bool offset) {
  if (!x.defined()) throw ValueError("rms_norm: undefined input tensor");
  const Device device = common_device("rms_norm", {x, weight});
  check_floating_any_device(x, "rms_norm");
  if (x.dim() == 0 || x.size(-1) == 0)
    throw ShapeError("rms_norm: needs a non-empty last axis to normalise over, got " + shape_str(x.shape()));
  if (!(eps >= 0) || !std::isfinite(eps))
    throw ValueError("rms_norm: eps must be finite and >= 0, got " + std::to_string(eps));
  const std::int64_t C = x.size(-1);
  const std::int64_t rows = x.numel() / C;
  if (weight.defined()) {
    check_floating_any_device(weight, "rms_norm");
    check_same_dtype(x, weight, "rms_norm");
    if (weight.shape() != Shape{C})
      throw ShapeError("rms_norm: weight must have shape [" + std::to_string(C) + "] for input " +
                       shape_str(x.shape()) + ", got " + shape_str(weight.shape()));
  }

  Tensor y = Tensor::empty(x.shape(), x.dtype(), device);
  Tensor rstd = Tensor::empty({rows}, x.dtype(), device);
#ifdef GATTN_WITH_CUDA
  auto f = [](const Tensor& t) { return t.defined() ? static_cast<float*>(t.raw_data()) : nullptr; };
  if (device == Device::cuda)
    cuda::rms_norm_forward_f32(f(x), f(weight), f(y), f(rstd), rows, C, eps, offset, cuda::stream());
  else
#endif
    dispatch_float(x.dtype(), "rms_norm", [&]<class T>() {
      cpu::rms_norm_forward(x.data<T>(), weight.defined() ? weight.data<T>() : nullptr, y.data<T>(), rstd.data<T>(),
                            rows, C, eps, offset);
    });

  return autograd::record(
      "rms_norm", y, {x, weight},
      [x = x.detach(), w = weight.defined() ? weight.detach() : Tensor(), rstd, C, rows, offset](
          const Tensor& g_in, const std::vector<bool>& needs) {
        Tensor g = g_in.to(x.dtype());
        const Device dev = x.device();
        Tensor dx = needs[0] ? Tensor::empty(x.shape(), x.dtype(), dev) : Tensor();
        Tensor dw = needs[1] && w.defined() ? Tensor::empty({C}, x.dtype(), dev) : Tensor();
#ifdef GATTN_WITH_CUDA
        if (dev == Device::cuda) {
          auto f = [](const Tensor& t) { return t.defined() ? static_cast<float*>(t.raw_data()) : nullptr; };
          cuda::rms_norm_backward_f32(f(x), f(w), f(rstd), f(g), f(dx), f(dw), rows, C, offset, cuda::stream());
          return std::vector<Tensor>{dx, dw};
        }
#endif
        Tensor scratch = dw.defined() ? Tensor::empty({cpu::rms_norm_scratch_size(rows, C)}, x.dtype()) : Tensor();
        dispatch_float(x.dtype(), "rms_norm backward", [&]<class T>() {
          cpu::rms_norm_backward(x.data<T>(), w.defined() ? w.data<T>() : nullptr, rstd.data<T>(), g.data<T>(),
                                 dx.defined() ? dx.data<T>() : nullptr, dw.defined() ? dw.data<T>() : nullptr,
                                 scratch.defined() ? scratch.data<T>() : nullptr, rows, C, offset);
        });
        return std::vector<Tensor>{dx, dw};
      });
}

}  // namespace gattn::ops
