// dropout (autograd-aware): inverted dropout with a Philox mask drawn from the Generator; kernel in
// ops/cpu/dropout.h. The mask is not stored: the backward regenerates it from the saved stream
// position (seed, stream, offset), which costs one Philox block per 4 elements instead of a mask
// tensor kept alive until backward. Backward: dx = g ⊙ mask / (1 − p), the same map as the forward.
#include "ops/cpu/dropout.h"

#include "ops/common.h"
#include "ops/nn_functional.h"
#ifdef GATTN_WITH_CUDA
#include "ops/cuda/dropout.h"
#include "ops/cuda/host_util.h"
#endif

namespace gattn::ops {

Tensor dropout(const Tensor& x, double p, Generator& gen, bool training) {
  check_floating_any_device(x, "dropout");
  if (!(p >= 0.0 && p < 1.0)) throw ValueError("dropout: p must be in [0, 1), got " + std::to_string(p));
  // Identity: no draw, so eval mode and p = 0 leave the generator where it was.
  if (!training || p == 0.0) return x;

  const std::int64_t n = x.numel();
  const GeneratorState s = gen.state();
  const std::uint64_t offset = gen.reserve(static_cast<std::uint64_t>(n));
  const std::uint32_t threshold = cpu::dropout_threshold(p);
  const double scale = 1.0 / (1.0 - p);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  // The same mask on either device: (seed, stream, offset) fix the Philox words.
  auto apply = [=](const Tensor& in, Tensor& dst) {
#ifdef GATTN_WITH_CUDA
    if (in.device() == Device::cuda) {
      cuda::dropout_apply_f32(static_cast<const float*>(in.raw_data()), static_cast<float*>(dst.raw_data()), n, s.seed,
                              s.stream, offset, threshold, static_cast<float>(scale), cuda::stream());
      return;
    }
#endif
    dispatch_float(in.dtype(), "dropout", [&]<class T>() {
      cpu::dropout_apply(in.data<T>(), dst.data<T>(), n, s.seed, s.stream, offset, threshold, static_cast<T>(scale));
    });
  };
  apply(x, out);

  return autograd::record("dropout", out, {x},
                          [apply, dtype = x.dtype()](const Tensor& g_in, const std::vector<bool>&) {
                            Tensor g = g_in.to(dtype);
                            Tensor dx = Tensor::empty(g.shape(), dtype, g.device());
                            apply(g, dx);
                            return std::vector<Tensor>{dx};
                          });
}

}  // namespace gattn::ops
