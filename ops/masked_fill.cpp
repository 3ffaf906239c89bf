// masked_fill (autograd-aware): `value` where the broadcast i32 mask is nonzero, x elsewhere;
// kernel in ops/cpu/masked_fill.h. Backward: dx = g with the masked positions zeroed (the filled
// positions are constants); the mask gets no gradient.
#include "ops/nn_functional.h"

#include "ops/broadcast.h"
#include "ops/common.h"
#include "ops/cpu/masked_fill.h"

namespace gattn::ops {

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  check_floating(x, "masked_fill");
  if (!mask.defined()) throw ValueError("masked_fill: undefined mask");
  if (mask.dtype() != DType::i32) throw DTypeError("masked_fill: mask must be i32, got " + mask.str());
  check_cpu(mask, "masked_fill");
  // The mask broadcasts to x, never the other way: the output keeps x's shape.
  if (broadcast_shape(x.shape(), mask.shape(), "masked_fill") != x.shape())
    throw ShapeError("masked_fill: mask " + shape_str(mask.shape()) + " does not broadcast to x " +
                     shape_str(x.shape()));
  BroadcastPlan plan = make_broadcast_plan(x.shape(), mask.shape(), x.shape());
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  if (plan.numel > 0)
    dispatch_float(x.dtype(), "masked_fill", [&]<class T>() {
      cpu::masked_fill(plan, x.data<T>(), mask.data<std::int32_t>(), static_cast<T>(value), out.data<T>());
    });

  return autograd::record("masked_fill", out, {x},
                          [m = mask.detach(), plan, dtype = x.dtype()](const Tensor& g_in, const std::vector<bool>&) {
                            Tensor g = g_in.to(dtype);
                            Tensor dx = Tensor::empty(g.shape(), dtype);
                            if (plan.numel > 0)
                              dispatch_float(dtype, "masked_fill backward", [&]<class T>() {
                                cpu::masked_fill(plan, g.data<T>(), m.data<std::int32_t>(), T(0), dx.data<T>());
                              });
                            return std::vector<Tensor>{dx};
                          });
}

}  // namespace gattn::ops
