// Shape ops with their backwards: reshape/unsqueeze/squeeze are storage-sharing views (their
// gradient is g viewed in the input's shape); transpose/permute/slice/split/chunk/concat copy.
// The copies only move elements, so they work for every dtype (one kernel per element size).
#include "ops/shape.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "ops/common.h"
#include "ops/cpu/shape.h"
#ifdef GATTN_WITH_CUDA
#include "ops/cuda/host_util.h"
#include "ops/cuda/shape.h"
#endif

namespace gattn::ops {

namespace {

std::string dims_str(const std::vector<std::int64_t>& v) { return shape_str(Shape(v.begin(), v.end())); }

void check_input(const Tensor& x, const char* op) {
  if (!x.defined()) throw ValueError(std::string(op) + ": undefined tensor argument");
}

// Calls fn.template operator()<U>() with an unsigned integer U as wide as one element of `t`.
template <class Fn>
void dispatch_bytes(DType t, Fn&& fn) {
  switch (dtype_size(t)) {
    case 1:
      fn.template operator()<std::uint8_t>();
      break;
    case 2:
      fn.template operator()<std::uint16_t>();
      break;
    case 4:
      fn.template operator()<std::uint32_t>();
      break;
    case 8:
      fn.template operator()<std::uint64_t>();
      break;
    default:
      throw DTypeError(std::string("shape op: unsupported element size for ") + dtype_name(t));
  }
}

template <class U>
const U* raw(const Tensor& t) {
  return static_cast<const U*>(t.raw_data());
}
template <class U>
U* raw_mut(Tensor& t) {
  return static_cast<U*>(t.raw_data());
}

// cpu::copy_axis_block's contract on the tensors' device (both on the same one).
void block_copy(const Tensor& src, std::int64_t src_len, std::int64_t src_off, Tensor& dst, std::int64_t dst_len,
                std::int64_t dst_off, std::int64_t outer, std::int64_t len, std::int64_t inner) {
#ifdef GATTN_WITH_CUDA
  if (src.device() == Device::cuda) {
    cuda::copy_axis_block(src.raw_data(), src_len, src_off, dst.raw_data(), dst_len, dst_off, outer, len, inner,
                          static_cast<int>(dtype_size(src.dtype())), cuda::stream());
    return;
  }
#endif
  dispatch_bytes(src.dtype(), [&]<class U>() {
    cpu::copy_axis_block(raw<U>(src), src_len, src_off, raw_mut<U>(dst), dst_len, dst_off, outer, len, inner);
  });
}

// A view of x with another shape of equal numel, recorded under `op`; the gradient is g viewed back.
Tensor view_as(const Tensor& x, const Shape& shape, const char* op) {
  Tensor out = x.alias(shape);
  return autograd::record(op, out, {x}, [in_shape = x.shape()](const Tensor& g, const std::vector<bool>&) {
    return std::vector<Tensor>{g.alias(in_shape)};
  });
}

// x as [outer, len, inner] around `axis` (which must be a valid axis of x).
struct AxisSplit {
  std::int64_t outer = 1, len = 0, inner = 1;
};
AxisSplit split_at(const Shape& s, std::int64_t axis) {
  AxisSplit r;
  for (std::int64_t d = 0; d < axis; ++d) r.outer *= s[d];
  r.len = s[axis];
  for (std::size_t d = axis + 1; d < s.size(); ++d) r.inner *= s[d];
  return r;
}

// Rank ≥ 1 and a valid axis: the ops that cut along an axis say so plainly for a 0-d tensor
// instead of reporting an out-of-range axis.
std::int64_t cut_axis(const Tensor& x, std::int64_t axis, const char* op) {
  if (x.dim() == 0)
    throw ShapeError(std::string(op) + ": tensor " + shape_str(x.shape()) + " has no axis to cut along");
  return normalize_axis(axis, x.dim(), op);
}

// The permute problem reduced to its essentials: size-1 dims dropped and runs of dims that stay
// adjacent and in order merged, so e.g. [B, T, H, D] -> [B, H, T, D] becomes a swap of two axes
// with outer B and inner D.
struct PermutePlan {
  Shape in_shape;                  // merged input dims
  std::vector<std::int64_t> perm;  // output dim k is merged input dim perm[k]
};

PermutePlan simplify_permutation(const Shape& s, const std::vector<std::int64_t>& p) {
  const std::size_t n = s.size();
  std::vector<std::int64_t> new_index(n, -1);
  Shape s1;
  for (std::size_t d = 0; d < n; ++d)
    if (s[d] != 1) {
      new_index[d] = static_cast<std::int64_t>(s1.size());
      s1.push_back(s[d]);
    }
  std::vector<std::pair<std::int64_t, std::int64_t>> groups;  // [first, last] input dims, in output order
  for (std::size_t k = 0; k < n; ++k) {
    if (s[p[k]] == 1) continue;
    const std::int64_t d = new_index[p[k]];
    if (!groups.empty() && groups.back().second + 1 == d)
      groups.back().second = d;
    else
      groups.emplace_back(d, d);
  }
  std::vector<std::size_t> by_input(groups.size());
  std::iota(by_input.begin(), by_input.end(), std::size_t{0});
  std::sort(by_input.begin(), by_input.end(),
            [&](std::size_t a, std::size_t b) { return groups[a].first < groups[b].first; });
  PermutePlan plan;
  plan.perm.resize(groups.size());
  for (std::size_t r = 0; r < by_input.size(); ++r) {
    const auto [first, last] = groups[by_input[r]];
    std::int64_t size = 1;
    for (std::int64_t d = first; d <= last; ++d) size *= s1[d];
    plan.in_shape.push_back(size);
    plan.perm[by_input[r]] = static_cast<std::int64_t>(r);
  }
  return plan;
}

// out = x with its dims permuted (validated), through the cheapest kernel the plan allows.
void permute_copy(const Tensor& x, Tensor& out, const std::vector<std::int64_t>& perm) {
  const std::int64_t numel = x.numel();
  if (numel == 0) return;
  const PermutePlan plan = simplify_permutation(x.shape(), perm);
  const std::size_t n = plan.perm.size();
  std::vector<std::size_t> moved;
  for (std::size_t k = 0; k < n; ++k)
    if (plan.perm[k] != static_cast<std::int64_t>(k)) moved.push_back(k);
  if (moved.empty()) {  // the order of the elements does not change
    block_copy(x, 1, 0, out, 1, 0, 1, 1, numel);
    return;
  }
  const Shape& s = plan.in_shape;
  if (moved.size() == 2 && x.device() == Device::cpu) {  // a swap of two axes i < j: [outer, A, mid, B, inner]
    const std::size_t i = moved[0], j = moved[1];
    auto prod = [&](std::size_t b, std::size_t e) {
      std::int64_t r = 1;
      for (std::size_t d = b; d < e; ++d) r *= s[d];
      return r;
    };
    dispatch_bytes(x.dtype(), [&]<class U>() {
      cpu::swap_axes(raw<U>(x), raw_mut<U>(out), prod(0, i), s[i], prod(i + 1, j), s[j], prod(j + 1, n));
    });
    return;
  }
  std::vector<std::int64_t> in_strides(n), out_shape(n), strides(n);
  std::int64_t st = 1;
  for (std::size_t d = n; d-- > 0;) {
    in_strides[d] = st;
    st *= s[d];
  }
  for (std::size_t k = 0; k < n; ++k) {
    out_shape[k] = s[plan.perm[k]];
    strides[k] = in_strides[plan.perm[k]];
  }
#ifdef GATTN_WITH_CUDA
  if (x.device() == Device::cuda) {
    BroadcastPlan gather;  // reuses the kernels' index struct: shape = out_shape, sa = input strides
    gather.shape = out_shape;
    gather.sa = strides;
    gather.sb = strides;
    cuda::strided_gather(x.raw_data(), out.raw_data(), cuda::to_strided_index(gather, "permute"), numel,
                         static_cast<int>(dtype_size(x.dtype())), cuda::stream());
    return;
  }
#endif
  dispatch_bytes(x.dtype(), [&]<class U>() { cpu::strided_gather(raw<U>(x), raw_mut<U>(out), out_shape, strides); });
}

// permute after validation; `op` names the public op in errors and in the graph.
Tensor permute_impl(const Tensor& x, const std::vector<std::int64_t>& perm, const char* op) {
  Shape out_shape(perm.size());
  for (std::size_t k = 0; k < perm.size(); ++k) out_shape[k] = x.shape()[perm[k]];
  Tensor out = Tensor::empty(out_shape, x.dtype(), x.device());
  permute_copy(x, out, perm);
  std::vector<std::int64_t> inverse(perm.size());
  for (std::size_t k = 0; k < perm.size(); ++k) inverse[perm[k]] = static_cast<std::int64_t>(k);
  // out = permute(x, p)  =>  dx = permute(g, p⁻¹).
  return autograd::record(op, out, {x}, [inverse, op](const Tensor& g, const std::vector<bool>&) {
    return std::vector<Tensor>{permute_impl(g, inverse, op)};
  });
}

// out = x[..., start:end, ...] along axis (validated).
Tensor slice_copy(const Tensor& x, std::int64_t axis, std::int64_t start, std::int64_t end) {
  Shape out_shape = x.shape();
  out_shape[axis] = end - start;
  Tensor out = Tensor::empty(out_shape, x.dtype(), x.device());
  const AxisSplit a = split_at(x.shape(), axis);
  block_copy(x, a.len, start, out, end - start, 0, a.outer, end - start, a.inner);
  return out;
}

}  // namespace

Tensor reshape(const Tensor& x, const Shape& shape) {
  check_input(x, "reshape");
  Shape target = shape;
  std::int64_t infer = -1, known = 1;
  for (std::size_t d = 0; d < target.size(); ++d) {
    if (target[d] == -1) {
      if (infer >= 0)
        throw ValueError("reshape: more than one -1 in " + shape_str(shape) + " (reshaping " + shape_str(x.shape()) +
                         ")");
      infer = static_cast<std::int64_t>(d);
    } else if (target[d] < 0) {
      throw ValueError("reshape: negative dimension in " + shape_str(shape) + " (reshaping " + shape_str(x.shape()) +
                       ")");
    } else {
      known *= target[d];
    }
  }
  if (infer >= 0) {
    // -1 is ambiguous when the other dims multiply to 0, and impossible when they do not divide numel.
    if (known == 0 || x.numel() % known != 0)
      throw ShapeError("reshape: cannot view " + shape_str(x.shape()) + " (" + std::to_string(x.numel()) +
                       " elements) as " + shape_str(shape));
    target[infer] = x.numel() / known;
  }
  return view_as(x, target, "reshape");  // alias() throws the ShapeError for a numel mismatch
}

Tensor transpose(const Tensor& x, std::int64_t dim0, std::int64_t dim1) {
  check_input(x, "transpose");
  const std::int64_t r = x.dim();
  const std::int64_t d0 = normalize_axis(dim0, r, "transpose"), d1 = normalize_axis(dim1, r, "transpose");
  std::vector<std::int64_t> perm(r);
  std::iota(perm.begin(), perm.end(), std::int64_t{0});
  if (r > 0) std::swap(perm[d0], perm[d1]);
  return permute_impl(x, perm, "transpose");
}

Tensor permute(const Tensor& x, const std::vector<std::int64_t>& dims) {
  check_input(x, "permute");
  const std::int64_t r = x.dim();
  if (static_cast<std::int64_t>(dims.size()) != r)
    throw ShapeError("permute: dims " + dims_str(dims) + " do not have one entry per dimension of " +
                     shape_str(x.shape()));
  std::vector<std::int64_t> perm(r);
  std::vector<bool> seen(r, false);
  for (std::int64_t k = 0; k < r; ++k) {
    perm[k] = normalize_axis(dims[k], r, "permute");
    if (seen[perm[k]])
      throw ValueError("permute: dims " + dims_str(dims) + " repeat axis " + std::to_string(perm[k]) + " of " +
                       shape_str(x.shape()));
    seen[perm[k]] = true;
  }
  return permute_impl(x, perm, "permute");
}

Tensor slice(const Tensor& x, std::int64_t axis, std::int64_t start, std::int64_t end) {
  check_input(x, "slice");
  const std::int64_t ax = cut_axis(x, axis, "slice");
  const std::int64_t len = x.shape()[ax];
  if (start < 0 || end < start || end > len)
    throw ValueError("slice: range [" + std::to_string(start) + ", " + std::to_string(end) +
                     ") out of bounds for axis " + std::to_string(ax) + " (length " + std::to_string(len) + ") of " +
                     shape_str(x.shape()));
  Tensor out = slice_copy(x, ax, start, end);
  // dx = zeros with g written into the window [start, end) along the axis.
  return autograd::record("slice", out, {x},
                          [in_shape = x.shape(), ax, start](const Tensor& g, const std::vector<bool>&) {
                            Tensor dx = Tensor::zeros(in_shape, g.dtype(), g.device());
                            const AxisSplit a = split_at(in_shape, ax);
                            const std::int64_t n = g.shape()[ax];
                            block_copy(g, n, 0, dx, a.len, start, a.outer, n, a.inner);
                            return std::vector<Tensor>{dx};
                          });
}

std::vector<Tensor> split(const Tensor& x, const std::vector<std::int64_t>& sizes, std::int64_t axis) {
  check_input(x, "split");
  const std::int64_t ax = cut_axis(x, axis, "split");
  std::int64_t total = 0;
  for (std::int64_t s : sizes) {
    if (s < 0) throw ValueError("split: negative size in " + dims_str(sizes) + " for " + shape_str(x.shape()));
    total += s;
  }
  if (total != x.shape()[ax])
    throw ShapeError("split: sizes " + dims_str(sizes) + " add up to " + std::to_string(total) + " but axis " +
                     std::to_string(ax) + " of " + shape_str(x.shape()) + " has length " +
                     std::to_string(x.shape()[ax]));
  std::vector<Tensor> pieces;
  pieces.reserve(sizes.size());
  std::int64_t off = 0;
  for (std::int64_t s : sizes) {
    pieces.push_back(slice_copy(x, ax, off, off + s));
    off += s;
  }
  // One node for all the pieces: its backward writes each piece's gradient into its window of one
  // dx (zeros first only when some piece got none), where a slice per piece would zero-fill a whole
  // dx each and the engine would then sum them (the qkv split of every block).
  return autograd::record_multi(
      "split", pieces, {x}, [in_shape = x.shape(), ax, sizes](const std::vector<Tensor>& g, const std::vector<bool>&) {
        const Tensor* any = nullptr;
        bool all = true;
        for (const Tensor& gi : g) {
          if (gi.defined() && !any) any = &gi;
          all = all && gi.defined();
        }
        Tensor dx = all ? Tensor::empty(in_shape, any->dtype(), any->device())
                        : Tensor::zeros(in_shape, any->dtype(), any->device());
        const AxisSplit a = split_at(in_shape, ax);
        std::int64_t at = 0;
        for (std::size_t i = 0; i < sizes.size(); ++i) {
          if (g[i].defined()) block_copy(g[i], sizes[i], 0, dx, a.len, at, a.outer, sizes[i], a.inner);
          at += sizes[i];
        }
        return std::vector<Tensor>{dx};
      });
}

std::vector<Tensor> split_heads(const Tensor& x, std::int64_t pieces, std::int64_t n_head) {
  check_input(x, "split_heads");
  if (x.dim() != 3 || pieces <= 0 || n_head <= 0 || x.size(2) % (pieces * n_head) != 0)
    throw ShapeError("split_heads: expected [B, T, C] with C divisible by " + std::to_string(pieces) + " pieces × " +
                     std::to_string(n_head) + " heads, got " + shape_str(x.shape()));
  const std::int64_t B = x.size(0), Tn = x.size(1), d = x.size(2) / (pieces * n_head);
  if (x.device() != Device::cpu) {
    std::vector<Tensor> parts = chunk(x, pieces, 2);
    for (Tensor& part : parts) part = permute(reshape(part, {B, Tn, n_head, d}), {0, 2, 1, 3});
    return parts;
  }
  std::vector<Tensor> heads;
  for (std::int64_t p = 0; p < pieces; ++p) heads.push_back(Tensor::empty({B, n_head, Tn, d}, x.dtype()));
  dispatch_bytes(x.dtype(), [&]<class U>() {
    std::vector<U*> out;
    for (Tensor& h : heads) out.push_back(raw_mut<U>(h));
    cpu::head_layout_copy(const_cast<U*>(raw<U>(x)), out.data(), B, Tn, pieces, n_head, d, true);
  });
  return autograd::record_multi(
      "split_heads", heads, {x},
      [in_shape = x.shape(), B, Tn, pieces, n_head, d](const std::vector<Tensor>& g, const std::vector<bool>&) {
        const Tensor* any = nullptr;
        for (const Tensor& gi : g)
          if (gi.defined() && !any) any = &gi;
        Tensor dx = Tensor::empty(in_shape, any->dtype());
        dispatch_bytes(dx.dtype(), [&]<class U>() {
          std::vector<U*> grads;  // null where a piece got no gradient: zeros
          for (const Tensor& gi : g) grads.push_back(gi.defined() ? const_cast<U*>(raw<U>(gi)) : nullptr);
          cpu::head_layout_copy(raw_mut<U>(dx), grads.data(), B, Tn, pieces, n_head, d, false);
        });
        return std::vector<Tensor>{dx};
      });
}

std::vector<Tensor> chunk(const Tensor& x, std::int64_t n, std::int64_t axis) {
  check_input(x, "chunk");
  const std::int64_t ax = cut_axis(x, axis, "chunk");
  if (n <= 0)
    throw ValueError("chunk: number of pieces must be positive, got " + std::to_string(n) + " for " +
                     shape_str(x.shape()));
  const std::int64_t len = x.shape()[ax];
  if (len % n != 0)
    throw ShapeError("chunk: axis " + std::to_string(ax) + " of " + shape_str(x.shape()) + " (length " +
                     std::to_string(len) + ") does not split into " + std::to_string(n) + " equal pieces");
  return split(x, std::vector<std::int64_t>(n, len / n), ax);
}

Tensor concat(const std::vector<Tensor>& xs, std::int64_t axis) {
  if (xs.empty()) throw ValueError("concat: no tensors to concatenate");
  for (const Tensor& x : xs) check_input(x, "concat");
  const Device device = common_device("concat", xs);
  const Tensor& first = xs[0];
  const std::int64_t ax = cut_axis(first, axis, "concat");
  std::int64_t total = 0;
  for (const Tensor& x : xs) {
    check_same_dtype(first, x, "concat");
    bool ok = x.dim() == first.dim();
    for (std::int64_t d = 0; ok && d < first.dim(); ++d) ok = d == ax || x.shape()[d] == first.shape()[d];
    if (!ok)
      throw ShapeError("concat: shapes " + shape_str(first.shape()) + " and " + shape_str(x.shape()) +
                       " differ outside axis " + std::to_string(ax));
    total += x.shape()[ax];
  }
  Shape out_shape = first.shape();
  out_shape[ax] = total;
  Tensor out = Tensor::empty(out_shape, first.dtype(), device);
  const AxisSplit a = split_at(out_shape, ax);
  std::vector<std::int64_t> offsets;
  offsets.reserve(xs.size());
  std::int64_t off = 0;
  for (const Tensor& x : xs) {
    const std::int64_t n = x.shape()[ax];
    block_copy(x, n, 0, out, total, off, a.outer, n, a.inner);
    offsets.push_back(off);
    off += n;
  }
  // dx_i = g[..., off_i : off_i + n_i, ...] along the axis.
  std::vector<std::int64_t> lengths;
  for (const Tensor& x : xs) lengths.push_back(x.shape()[ax]);
  return autograd::record("concat", out, xs, [ax, offsets, lengths](const Tensor& g, const std::vector<bool>& needs) {
    std::vector<Tensor> grads(needs.size());
    for (std::size_t i = 0; i < needs.size(); ++i)
      if (needs[i]) grads[i] = slice_copy(g, ax, offsets[i], offsets[i] + lengths[i]);
    return grads;
  });
}

Tensor unsqueeze(const Tensor& x, std::int64_t axis) {
  check_input(x, "unsqueeze");
  const std::int64_t ax = normalize_axis(axis, x.dim() + 1, "unsqueeze");
  Shape s = x.shape();
  s.insert(s.begin() + ax, 1);
  return view_as(x, s, "unsqueeze");
}

Tensor squeeze(const Tensor& x, std::int64_t axis) {
  check_input(x, "squeeze");
  if (x.dim() == 0) throw ShapeError("squeeze: tensor " + shape_str(x.shape()) + " has no axis to squeeze");
  const std::int64_t ax = normalize_axis(axis, x.dim(), "squeeze");
  if (x.shape()[ax] != 1)
    throw ShapeError("squeeze: axis " + std::to_string(ax) + " of " + shape_str(x.shape()) + " has size " +
                     std::to_string(x.shape()[ax]) + ", not 1");
  Shape s = x.shape();
  s.erase(s.begin() + ax);
  return view_as(x, s, "squeeze");
}

}  // namespace gattn::ops
