// cumsum (autograd-aware); kernel in ops/cpu/scan.h.
// Backward of y_i = Σ_{l ≤ i} x_l: dx_l = Σ_{i ≥ l} g_i, the reverse cumulative sum of g. The
// reverse scan's backward is the forward scan, so both directions are one function.
#include "ops/scan.h"

#include "core/autograd/node.h"
#include "ops/common.h"
#include "ops/cpu/scan.h"
#ifdef GATTN_WITH_CUDA
#include "ops/cuda/host_util.h"
#include "ops/cuda/reduce.h"
#endif

namespace gattn::ops {

namespace {

Tensor scan(const Tensor& x, std::int64_t axis, bool reverse) {
  const char* op = reverse ? "cumsum backward" : "cumsum";
  check_floating_any_device(x, op);
  // A scalar has no axis to scan: normalize_axis throws ValueError for rank 0.
  const std::int64_t ax = normalize_axis(axis, x.dim(), op);
  const Shape& s = x.shape();
  std::int64_t outer = 1, inner = 1;
  const std::int64_t n = s[static_cast<std::size_t>(ax)];
  for (std::int64_t d = 0; d < ax; ++d) outer *= s[static_cast<std::size_t>(d)];
  for (std::int64_t d = ax + 1; d < x.dim(); ++d) inner *= s[static_cast<std::size_t>(d)];
  Tensor y = Tensor::empty(s, x.dtype(), x.device());
#ifdef GATTN_WITH_CUDA
  if (x.device() == Device::cuda)
    cuda::cumsum_lines_f32(static_cast<const float*>(x.raw_data()), static_cast<float*>(y.raw_data()), outer, n, inner,
                           reverse, cuda::stream());
  else
#endif
    dispatch_float(x.dtype(), op,
                   [&]<class T>() { cpu::cumsum_lines(x.data<T>(), y.data<T>(), outer, n, inner, reverse); });
  return autograd::record(op, y, {x}, [ax, reverse](const Tensor& g, const std::vector<bool>&) {
    return std::vector<Tensor>{scan(g, ax, !reverse)};
  });
}

}  // namespace

Tensor cumsum(const Tensor& x, std::int64_t axis) { return scan(x, axis, false); }

}  // namespace gattn::ops
