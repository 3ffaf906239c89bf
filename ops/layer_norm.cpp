// layer_norm over the last axis (autograd-aware), fused: the forward saves the row mean and 1/σ,
// the backward produces dx, dweight and dbias in one kernel (ops/cpu/layer_norm.h). Backward math,
// with x̂ = (x − μ)/σ and ĝ = g ⊙ w per row of C:
//   dx = (1/σ) (ĝ − mean(ĝ) − x̂ · mean(ĝ ⊙ x̂)),  dweight = Σ_rows g ⊙ x̂,  dbias = Σ_rows g.
#include "ops/cpu/layer_norm.h"

#include <cmath>

#include "ops/common.h"
#include "ops/nn_functional.h"
#ifdef GATTN_WITH_CUDA
#include "ops/cuda/host_util.h"
#include "ops/cuda/layer_norm.h"
#endif

namespace gattn::ops {

namespace {

// weight/bias must be [C] of x's dtype; undefined means "no affine part" (scale 1, shift 0).
void check_param(const Tensor& p, const Tensor& x, std::int64_t C, const char* what) {
  if (!p.defined()) return;
  check_floating_any_device(p, "layer_norm");
  check_same_dtype(x, p, "layer_norm");
  if (p.shape() != Shape{C})
    throw ShapeError(std::string("layer_norm: ") + what + " must have shape [" + std::to_string(C) + "] for input " +
                     shape_str(x.shape()) + ", got " + shape_str(p.shape()));
}

}  // namespace

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  const Device device = common_device("layer_norm", {x, weight, bias});
  check_floating_any_device(x, "layer_norm");
  if (x.dim() == 0 || x.size(-1) == 0)
    throw ShapeError("layer_norm: needs a non-empty last axis to normalise over, got " + shape_str(x.shape()));
  if (!(eps >= 0) || !std::isfinite(eps))
    throw ValueError("layer_norm: eps must be finite and >= 0, got " + std::to_string(eps));
  const std::int64_t C = x.size(-1);
  const std::int64_t rows = x.numel() / C;
  check_param(weight, x, C, "weight");
  check_param(bias, x, C, "bias");

  Tensor y = Tensor::empty(x.shape(), x.dtype(), device);
  Tensor mean = Tensor::empty({rows}, x.dtype(), device);
  Tensor rstd = Tensor::empty({rows}, x.dtype(), device);
#ifdef GATTN_WITH_CUDA
  auto f = [](const Tensor& t) { return t.defined() ? static_cast<float*>(t.raw_data()) : nullptr; };
  if (device == Device::cuda)
    cuda::layer_norm_forward_f32(f(x), f(weight), f(bias), f(y), f(mean), f(rstd), rows, C, eps, cuda::stream());
  else
#endif
    dispatch_float(x.dtype(), "layer_norm", [&]<class T>() {
      cpu::layer_norm_forward(x.data<T>(), weight.defined() ? weight.data<T>() : nullptr,
                              bias.defined() ? bias.data<T>() : nullptr, y.data<T>(), mean.data<T>(), rstd.data<T>(),
                              rows, C, eps);
    });

  const bool has_w = weight.defined(), has_b = bias.defined();
  return autograd::record(
      "layer_norm", y, {x, weight, bias},
      [x = x.detach(), w = has_w ? weight.detach() : Tensor(), mean, rstd, has_b, C, rows](
          const Tensor& g_in, const std::vector<bool>& needs) {
        Tensor g = g_in.to(x.dtype());
        const bool want_w = needs[1] && w.defined(), want_b = needs[2] && has_b;
        const Device dev = x.device();
        Tensor dx = needs[0] ? Tensor::empty(x.shape(), x.dtype(), dev) : Tensor();
        Tensor dw = want_w ? Tensor::empty({C}, x.dtype(), dev) : Tensor();
        Tensor db = want_b ? Tensor::empty({C}, x.dtype(), dev) : Tensor();
#ifdef GATTN_WITH_CUDA
        if (dev == Device::cuda) {
          auto f = [](const Tensor& t) { return t.defined() ? static_cast<float*>(t.raw_data()) : nullptr; };
          cuda::layer_norm_backward_f32(f(x), f(w), f(mean), f(rstd), f(g), f(dx), f(dw), f(db), rows, C,
                                        cuda::stream());
          return std::vector<Tensor>{dx, dw, db};
        }
#endif
        Tensor scratch =
            (want_w || want_b) ? Tensor::empty({cpu::layer_norm_scratch_size(rows, C)}, x.dtype()) : Tensor();
        dispatch_float(x.dtype(), "layer_norm backward", [&]<class T>() {
          cpu::layer_norm_backward(x.data<T>(), w.defined() ? w.data<T>() : nullptr, mean.data<T>(), rstd.data<T>(),
                                   g.data<T>(), dx.defined() ? dx.data<T>() : nullptr,
                                   dw.defined() ? dw.data<T>() : nullptr, db.defined() ? db.data<T>() : nullptr,
                                   scratch.defined() ? scratch.data<T>() : nullptr, rows, C);
        });
        return std::vector<Tensor>{dx, dw, db};
      });
}

}  // namespace gattn::ops
