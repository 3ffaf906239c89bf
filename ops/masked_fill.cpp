// masked_fill (autograd-aware): `value` where the broadcast i32 mask is nonzero, x elsewhere;
// kernel in ops/cpu/masked_fill.h. Backward: dx = g with the masked positions zeroed (the filled
// positions are constants); the mask gets no gradient.
#include "ops/cpu/masked_fill.h"

#include "ops/broadcast.h"
#include "ops/common.h"
#include "ops/nn_functional.h"
#ifdef GATTN_WITH_CUDA
#include "ops/cuda/elementwise.h"
#include "ops/cuda/host_util.h"
#endif

namespace gattn::ops {

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  check_floating_any_device(x, "masked_fill");
  if (!mask.defined()) throw ValueError("masked_fill: undefined mask");
  if (mask.dtype() != DType::i32) throw DTypeError("masked_fill: mask must be i32, got " + mask.str());
  common_device("masked_fill", {x, mask});
  // The mask broadcasts to x, never the other way: the output keeps x's shape.
  if (broadcast_shape(x.shape(), mask.shape(), "masked_fill") != x.shape())
    throw ShapeError("masked_fill: mask " + shape_str(mask.shape()) + " does not broadcast to x " +
                     shape_str(x.shape()));
  BroadcastPlan plan = make_broadcast_plan(x.shape(), mask.shape(), x.shape());
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  // out = `fill` where the mask is set, src elsewhere, on src's device.
  auto apply = [plan](const Tensor& src, const Tensor& m, double fill, Tensor& dst) {
    if (plan.numel == 0) return;
#ifdef GATTN_WITH_CUDA
    if (src.device() == Device::cuda) {
      cuda::masked_fill_f32(cuda::to_strided_index(plan, "masked_fill"), plan.numel,
                            static_cast<const float*>(src.raw_data()), static_cast<const int*>(m.raw_data()),
                            static_cast<float>(fill), static_cast<float*>(dst.raw_data()), cuda::stream());
      return;
    }
#endif
    dispatch_float(src.dtype(), "masked_fill", [&]<class T>() {
      cpu::masked_fill(plan, src.data<T>(), m.data<std::int32_t>(), static_cast<T>(fill), dst.data<T>());
    });
  };
  apply(x, mask, value, out);

  return autograd::record("masked_fill", out, {x},
                          [m = mask.detach(), apply, dtype = x.dtype()](const Tensor& g_in, const std::vector<bool>&) {
                            Tensor g = g_in.to(dtype);
                            Tensor dx = Tensor::empty(g.shape(), dtype, g.device());
                            apply(g, m, 0.0, dx);
                            return std::vector<Tensor>{dx};
                          });
}

}  // namespace gattn::ops
