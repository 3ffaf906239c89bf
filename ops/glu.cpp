// The fused gated linear units (autograd-aware); math in ops/glu.h, kernels in ops/cpu/glu.h and
// ops/cuda/glu.cu. SwiGLU's backward (and the CUDA kernels') recomputes σ(gate) from the saved inputs
// instead of saving act(gate): one exp per element is cheaper than another activation-sized buffer
// kept until backward. The CPU sigmoid GLU keeps σ(gate) in gate's place instead (its gradients need
// only σ), which saves the exp at no memory cost: on the CPU the exp is what the op costs.
#include "ops/glu.h"

#include <string>
#include <vector>

#include "core/autograd/node.h"
#include "ops/common.h"
#include "ops/cpu/glu.h"
#ifdef GATTN_WITH_CUDA
#include "ops/cuda/glu.h"
#include "ops/cuda/host_util.h"
#endif

namespace gattn::ops {

namespace {

const char* op_name(glu::Activation act) { return act == glu::Activation::silu ? "swiglu" : "glu_sigmoid"; }

}  // namespace

Tensor glu(const Tensor& gate, const Tensor& up, glu::Activation act) {
  const char* op = op_name(act);
  if (!gate.defined() || !up.defined()) throw ValueError(std::string(op) + ": undefined tensor argument");
  const Device device = common_device(op, {gate, up});
  check_floating_any_device(gate, op);
  check_same_dtype(gate, up, op);
  if (gate.shape() != up.shape())
    throw ShapeError(std::string(op) + ": gate and up must have the same shape, got gate " + shape_str(gate.shape()) +
                     " and up " + shape_str(up.shape()));
  const std::int64_t n = gate.numel();
  Tensor y = Tensor::empty(gate.shape(), gate.dtype(), device);
  Tensor saved_sigmoid;  // σ(gate), kept by the CPU sigmoid GLU for its backward
#ifdef GATTN_WITH_CUDA
  if (device == Device::cuda)
    cuda::glu_forward_f32(act, gate.kernel_data<float>(), up.kernel_data<float>(), y.kernel_data<float>(), n,
                          cuda::stream());
  else
#endif
    dispatch_float(gate.dtype(), op, [&]<class T>() {
      if (act == glu::Activation::silu) {
        cpu::glu_forward<glu::Activation::silu>(gate.data<T>(), up.data<T>(), y.data<T>(), n);
      } else {
        saved_sigmoid = Tensor::empty(gate.shape(), gate.dtype());
        cpu::glu_sigmoid_forward_saving(gate.data<T>(), up.data<T>(), y.data<T>(), saved_sigmoid.data<T>(), n);
      }
    });

  // The backward's first saved tensor: σ(gate) where the CPU sigmoid GLU kept it, else gate itself.
  const Tensor first_saved = saved_sigmoid.defined() ? saved_sigmoid : gate.detach();
  return autograd::record(
      op, y, {gate, up},
      [a = first_saved, u = up.detach(), act, op, from_sigmoid = saved_sigmoid.defined()](
          const Tensor& g_in, const std::vector<bool>& needs) {
        Tensor g = g_in.to(a.dtype());
        const Device dev = a.device();
        Tensor da = needs[0] ? Tensor::empty(a.shape(), a.dtype(), dev) : Tensor();
        Tensor du = needs[1] ? Tensor::empty(a.shape(), a.dtype(), dev) : Tensor();
        const std::int64_t n = a.numel();
#ifdef GATTN_WITH_CUDA
        if (dev == Device::cuda) {
          auto f = [](const Tensor& t) { return t.defined() ? t.kernel_data<float>() : nullptr; };
          cuda::glu_backward_f32(act, a.kernel_data<float>(), u.kernel_data<float>(), g.kernel_data<float>(), f(da),
                                 f(du), n, cuda::stream());
          return std::vector<Tensor>{da, du};
        }
#endif
        dispatch_float(a.dtype(), op, [&]<class T>() {
          T* pda = da.defined() ? da.data<T>() : nullptr;
          T* pdu = du.defined() ? du.data<T>() : nullptr;
          if (from_sigmoid)  // the CPU sigmoid GLU always keeps σ(gate)
            cpu::glu_sigmoid_backward_from_saved(a.data<T>(), u.data<T>(), g.data<T>(), pda, pdu, n);
          else
            cpu::glu_backward<glu::Activation::silu>(a.data<T>(), u.data<T>(), g.data<T>(), pda, pdu, n);
        });
        return std::vector<Tensor>{da, du};
      });
}

}  // namespace gattn::ops
