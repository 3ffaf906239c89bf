// Sums and means over all elements or chosen axes, and amax_last.
//
// Forward: size-1 dims are dropped and adjacent dims with the same role (reduced or kept) merged,
// leaving alternating groups. One reduced group is a single [outer, R, inner] block reduction
// (cpu::sum_blocks). Several reduced groups (e.g. axes {0, 2} of [A, B, C]) are reduced one group
// per pass, the largest first so later passes read the least data; for a mean each pass divides
// by its own group size, and a mean of equal-sized group means is the overall mean.
//
// Backward, with g the output gradient viewed with the reduced dims kept as size 1:
//   sum:  dx = broadcast(g) to x's shape          (every reduced element fed the output once)
//   mean: dx = broadcast(g) / N, N = the number of elements reduced into each output.
//
// Empty inputs: a sum over nothing is 0; a mean over nothing is NaN (0/0, as numpy).
#include "ops/reduce.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "core/autograd/grad_mode.h"
#include "ops/attention/attention.h"
#include "ops/broadcast.h"
#include "ops/common.h"
#include "ops/cpu/reduce.h"
#include "ops/elementwise.h"
#ifdef GATTN_WITH_CUDA
#include "ops/cuda/host_util.h"
#include "ops/cuda/reduce.h"
#endif

namespace gattn::ops {

namespace {

struct AxesPlan {
  std::vector<bool> reduced;  // per input dim
  Shape keep_shape;           // input shape with the reduced dims set to 1
  Shape out_shape;            // keep_shape, or with those dims removed when !keepdim
  std::int64_t count = 1;     // elements reduced into each output
};

AxesPlan plan_axes(const Tensor& x, const std::vector<std::int64_t>& axes, bool keepdim, const char* op) {
  const std::int64_t rank = x.dim();
  AxesPlan p;
  p.reduced.assign(static_cast<std::size_t>(rank), false);
  std::vector<std::int64_t> given_as(static_cast<std::size_t>(rank), 0);
  for (std::int64_t a : axes) {
    const std::int64_t k = normalize_axis(a, rank, op);
    const auto ku = static_cast<std::size_t>(k);
    if (p.reduced[ku])
      throw ValueError(std::string(op) + ": axis " + std::to_string(a) + " repeats axis " +
                       std::to_string(given_as[ku]) + " of " + x.str());
    p.reduced[ku] = true;
    given_as[ku] = a;
  }
  for (std::int64_t d = 0; d < rank; ++d) {
    const std::int64_t n = x.shape()[static_cast<std::size_t>(d)];
    if (p.reduced[static_cast<std::size_t>(d)]) {
      p.count *= n;
      p.keep_shape.push_back(1);
      if (keepdim) p.out_shape.push_back(1);
    } else {
      p.keep_shape.push_back(n);
      p.out_shape.push_back(n);
    }
  }
  return p;
}

struct Group {
  std::int64_t size;
  bool reduced;
};

// Sum (mean when `mean`) of x over the planned axes, into a new tensor of p.out_shape.
Tensor reduce_forward(const Tensor& x, const AxesPlan& p, bool mean, const char* op) {
  Tensor out = Tensor::empty(p.keep_shape, x.dtype(), x.device());
  if (x.numel() == 0) {
    // Only reachable with out.numel() > 0 when a reduced dim is 0: nothing was summed.
    out.fill(mean ? std::numeric_limits<double>::quiet_NaN() : 0.0);
    return out.alias(p.out_shape);
  }
  std::vector<Group> groups;
  for (std::size_t d = 0; d < p.reduced.size(); ++d) {
    const std::int64_t n = x.shape()[d];
    if (n == 1) continue;
    if (!groups.empty() && groups.back().reduced == p.reduced[d])
      groups.back().size *= n;
    else
      groups.push_back({n, p.reduced[d]});
  }
  std::size_t n_reduced = 0;
  for (const Group& g : groups) n_reduced += g.reduced ? 1 : 0;
  if (n_reduced == 0) {  // no axis, or only size-1 axes: a copy
    out.copy_from(x.alias(p.keep_shape));
    return out.alias(p.out_shape);
  }
  // One [outer, R, inner] block sum on x's device.
  auto sum_pass = [&](const Tensor& src, Tensor& dst, std::int64_t outer, std::int64_t R, std::int64_t inner) {
    const double divisor = mean ? static_cast<double>(R) : 1.0;
#ifdef GATTN_WITH_CUDA
    if (src.device() == Device::cuda) {
      cuda::sum_blocks_f32(static_cast<const float*>(src.raw_data()), static_cast<float*>(dst.raw_data()), outer, R,
                           inner, divisor, cuda::stream());
      return;
    }
#endif
    dispatch_float(x.dtype(), op,
                   [&]<class T>() { cpu::sum_blocks(src.data<T>(), dst.data<T>(), outer, R, inner, divisor); });
  };
  Tensor src = x;  // keeps the intermediate of the previous pass alive
  while (n_reduced > 0) {
    std::size_t j = 0;
    std::int64_t best = -1;
    for (std::size_t i = 0; i < groups.size(); ++i) {
      if (groups[i].reduced && groups[i].size > best) {
        best = groups[i].size;
        j = i;
      }
    }
    std::int64_t outer = 1, inner = 1;
    for (std::size_t i = 0; i < j; ++i) outer *= groups[i].size;
    for (std::size_t i = j + 1; i < groups.size(); ++i) inner *= groups[i].size;
    const std::int64_t R = groups[j].size;
    --n_reduced;
    // The last pass writes the result; earlier ones an intermediate of the kept-so-far elements.
    Tensor dst = n_reduced == 0 ? out : Tensor::empty({outer * inner}, x.dtype(), x.device());
    sum_pass(src, dst, outer, R, inner);
    groups.erase(groups.begin() + static_cast<std::ptrdiff_t>(j));
    src = dst;
  }
  return out.alias(p.out_shape);
}

// Records the backward of a sum (scale 1) or mean (scale 1/N) over the planned axes.
Tensor record_reduce(const char* op, const Tensor& x, Tensor out, const AxesPlan& p, double scale) {
  return autograd::record(op, out, {x},
                          [op, x_shape = x.shape(), dtype = x.dtype(), device = x.device(), keep = p.keep_shape,
                           out_shape = p.out_shape, scale](const Tensor& g_in, const std::vector<bool>&) {
                            if (g_in.shape() != out_shape)
                              throw ShapeError(std::string(op) + " backward: gradient " + shape_str(g_in.shape()) +
                                               " for an output of shape " + shape_str(out_shape));
                            Tensor g = (g_in.dtype() == dtype ? g_in : g_in.to(dtype)).alias(keep);
                            Tensor dx = Tensor::empty(x_shape, dtype, device);
                            BroadcastPlan plan = make_broadcast_plan(keep, keep, x_shape);
#ifdef GATTN_WITH_CUDA
                            if (device == Device::cuda) {
                              cuda::broadcast_scale_f32(
                                  cuda::to_strided_index(plan, op), plan.numel, static_cast<const float*>(g.raw_data()),
                                  static_cast<float>(scale), static_cast<float*>(dx.raw_data()), cuda::stream());
                              return std::vector<Tensor>{dx};
                            }
#endif
                            if (plan.numel > 0)
                              dispatch_float(dtype, op, [&]<class T>() {
                                cpu::broadcast_scale(plan, g.data<T>(), dx.data<T>(), static_cast<T>(scale));
                              });
                            return std::vector<Tensor>{dx};
                          });
}

std::vector<std::int64_t> all_axes(const Tensor& x) {
  std::vector<std::int64_t> axes(static_cast<std::size_t>(x.dim()));
  for (std::size_t d = 0; d < axes.size(); ++d) axes[d] = static_cast<std::int64_t>(d);
  return axes;
}

}  // namespace

Tensor sum(const Tensor& x, const std::vector<std::int64_t>& axes, bool keepdim) {
  check_floating_any_device(x, "sum");
  AxesPlan p = plan_axes(x, axes, keepdim, "sum");
  return record_reduce("sum", x, reduce_forward(x, p, false, "sum"), p, 1.0);
}

Tensor sum(const Tensor& x) {
  check_floating_any_device(x, "sum");
  return sum(x, all_axes(x), false);
}

Tensor mean(const Tensor& x, const std::vector<std::int64_t>& axes, bool keepdim) {
  check_floating_any_device(x, "mean");
  AxesPlan p = plan_axes(x, axes, keepdim, "mean");
  // N = 0 only when x is empty, and then the gradient is empty too: the scale is never used.
  const double scale = p.count > 0 ? 1.0 / static_cast<double>(p.count) : 0.0;
  return record_reduce("mean", x, reduce_forward(x, p, true, "mean"), p, scale);
}

Tensor mean(const Tensor& x) {
  check_floating_any_device(x, "mean");
  return mean(x, all_axes(x), false);
}

Tensor amax_last(const Tensor& x) {
  check_floating_any_device(x, "amax_last");
  if (x.dim() == 0) throw ValueError("amax_last: needs at least one axis, got " + x.str());
  const std::int64_t cols = x.shape().back();
  if (cols == 0) throw ValueError("amax_last: the last axis of " + x.str() + " is empty (max of nothing)");
  Shape out_shape(x.shape().begin(), x.shape().end() - 1);
  Tensor out = Tensor::empty(out_shape, x.dtype(), x.device());
  const std::int64_t rows = out.numel();
  if (rows == 0) return out;
#ifdef GATTN_WITH_CUDA
  if (x.device() == Device::cuda) {
    cuda::amax_rows_f32(static_cast<const float*>(x.raw_data()), static_cast<float*>(out.raw_data()), rows, cols,
                        cuda::stream());
    return out;
  }
#endif
  dispatch_float(x.dtype(), "amax_last", [&]<class T>() { cpu::amax_rows(x.data<T>(), out.data<T>(), rows, cols); });
  return out;
}

namespace {

template <class T>
bool all_finite_values(const T* d, std::int64_t n) {
  bool finite = true;
  for (std::int64_t i = 0; i < n; ++i) finite &= static_cast<bool>(std::isfinite(d[i]));  // no early exit: vectorises
  return finite;
}

// bf16 is the top half of an f32: all exponent bits set means Inf or NaN.
bool all_finite_bf16(const std::uint16_t* d, std::int64_t n) {
  bool finite = true;
  for (std::int64_t i = 0; i < n; ++i) finite &= (d[i] & 0x7F80u) != 0x7F80u;
  return finite;
}

}  // namespace

bool all_finite(const Tensor& t) {
  if (!is_floating(t.dtype()) || t.numel() == 0) return true;
  if (t.device() != Device::cpu) {
    // Σ 0·t is NaN exactly when some element is NaN or ±Inf (0·Inf = NaN).
    NoGradGuard no_grad;
    return std::isfinite(sum(mul_scalar(t, 0.0)).item());
  }
  switch (t.dtype()) {  // tensors are contiguous
    case DType::f32:
      return all_finite_values(t.data<float>(), t.numel());
    case DType::f64:
      return all_finite_values(t.data<double>(), t.numel());
    case DType::bf16:
      return all_finite_bf16(static_cast<const std::uint16_t*>(t.raw_data()), t.numel());
    default:
      return true;
  }
}

GateMoments gate_moments(const Tensor& g) {
  GateMoments m;
#ifdef GATTN_WITH_CUDA
  if (g.device() == Device::cuda && g.dtype() == DType::f32) {
    double out[4];
    cuda::gate_moments_f32(g.kernel_data<float>(), g.numel(), out, cuda::stream());
    m.sum = out[0];
    m.sum_sq = out[1];
    m.count = g.numel();
    m.below_0_1 = static_cast<std::int64_t>(out[2]);
    m.above_0_9 = static_cast<std::int64_t>(out[3]);
    return m;
  }
#endif
  for (double v : g.to_vector()) m.add(v);
  return m;
}

}  // namespace gattn::ops
