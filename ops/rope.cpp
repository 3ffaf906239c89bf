// rope (autograd-aware); math in ops/rope.h, kernels in ops/cpu/rope.h and ops/cuda/rope.cu.
// The rotation is orthogonal, so the backward is the same kernel rotating g by the negative angles,
// and its own backward the forward again: both directions are one function.
#include "ops/rope.h"

#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "core/autograd/node.h"
#include "ops/common.h"
#include "ops/cpu/rope.h"
#ifdef GATTN_WITH_CUDA
#include "ops/cuda/host_util.h"
#include "ops/cuda/rope.h"
#endif

namespace gattn::ops {

namespace {

std::string number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// The number of rotated elements of each row, rd = ⌊fraction·d⌋ (Hugging Face's int(d · factor)),
// after checking the arguments; throws naming `op`.
std::int64_t check_args(const Tensor& x, const Tensor& positions, double base, double fraction, const char* op) {
  if (!x.defined() || !positions.defined()) throw ValueError(std::string(op) + ": undefined tensor argument");
  if (x.dtype() != DType::f32 && x.dtype() != DType::f64)
    throw DTypeError(std::string(op) + ": expected an f32 or f64 tensor, got " + x.str());
  if (positions.dtype() != DType::i32)
    throw DTypeError(std::string(op) + ": positions must be i32, got " + positions.str());
  if (!(fraction > 0 && fraction <= 1))
    throw ValueError(std::string(op) + ": fraction must be in (0, 1], got " + number(fraction));
  if (x.dim() < 2 || (fraction == 1 && x.size(-1) % 2 != 0))
    throw ShapeError(std::string(op) + ": expected x [..., T, d] with d even, got " + shape_str(x.shape()));
  const std::int64_t d = x.size(-1);
  const auto rd = static_cast<std::int64_t>(static_cast<double>(d) * fraction);
  if (rd <= 0 || rd % 2 != 0)
    throw ValueError(std::string(op) + ": fraction " + number(fraction) + " of d = " + std::to_string(d) + " rotates " +
                     std::to_string(rd) + " elements; that must be even and > 0");
  if (positions.dim() != 1 || positions.size(0) != x.size(-2))
    throw ShapeError(std::string(op) + ": positions must be [T] = [" + std::to_string(x.size(-2)) + "] for x " +
                     shape_str(x.shape()) + ", got " + shape_str(positions.shape()));
  common_device(op, {x, positions});
  if (!(base > 0)) throw ValueError(std::string(op) + ": base must be > 0, got " + std::to_string(base));
  return rd;
}

Tensor rotate(const Tensor& x, const Tensor& positions, double base, double fraction, bool inverse) {
  const char* op = inverse ? "rope backward" : "rope";
  const std::int64_t rd = check_args(x, positions, base, fraction, op);
  const std::int64_t rows = x.size(-2), d = x.size(-1);
  std::int64_t outer = 1;
  for (std::int64_t a = 0; a + 2 < x.dim(); ++a) outer *= x.size(a);
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  const auto* p = positions.kernel_data<std::int32_t>();
#ifdef GATTN_WITH_CUDA
  if (x.device() == Device::cuda) {
    if (x.dtype() == DType::f32)
      cuda::rope_rows_f32(x.kernel_data<float>(), y.kernel_data<float>(), p, outer, rows, d, rd, base, inverse,
                          cuda::stream());
    else
      cuda::rope_rows_f64(x.kernel_data<double>(), y.kernel_data<double>(), p, outer, rows, d, rd, base, inverse,
                          cuda::stream());
  } else
#endif
    dispatch_float(x.dtype(), op,
                   [&]<class T>() { cpu::rope_rows(x.data<T>(), y.data<T>(), p, outer, rows, d, rd, base, inverse); });
  Tensor saved_positions = positions.detach();
  return autograd::record(op, y, {x},
                          [saved_positions, base, fraction, inverse](const Tensor& g, const std::vector<bool>&) {
                            return std::vector<Tensor>{rotate(g, saved_positions, base, fraction, !inverse)};
                          });
}

}  // namespace

Tensor rope(const Tensor& x, const Tensor& positions, double base, double fraction) {
  return rotate(x, positions, base, fraction, false);
}

Tensor position_ids(std::int64_t first, std::int64_t n, Device device) {
  if (n < 0 || first < std::numeric_limits<std::int32_t>::min() ||
      first + n - 1 > std::numeric_limits<std::int32_t>::max())
    throw ValueError("position_ids: positions " + std::to_string(first) + " … " + std::to_string(first + n - 1) +
                     " do not fit i32");
  std::vector<std::int32_t> p(static_cast<std::size_t>(n));
  for (std::int64_t t = 0; t < n; ++t) p[static_cast<std::size_t>(t)] = static_cast<std::int32_t>(first + t);
  Tensor out = Tensor::from_ints(p, {n});
  return device == Device::cpu ? out : out.to(device);
}

}  // namespace gattn::ops
