// NumPy-style broadcasting: the result shape of two operands and, per operand, the strides that
// read it at each output position (0 along broadcast dimensions). Shared by the CPU and CUDA paths.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor/tensor.h"

namespace gattn::ops {

// The broadcast shape of a and b; throws ShapeError naming `op` and both shapes.
Shape broadcast_shape(const Shape& a, const Shape& b, const char* op);

// Element strides of `in` (contiguous) when read at positions of `out` (same rank after left-padding
// with 1s); 0 where `in` has size 1 and `out` does not.
std::vector<std::int64_t> broadcast_strides(const Shape& in, const Shape& out);

// A broadcast loop with adjacent dimensions merged where both operands allow it: `shape` is the
// merged output shape and sa/sb the operands' strides in it. The innermost dimension is last.
struct BroadcastPlan {
  std::vector<std::int64_t> shape, sa, sb;
  std::int64_t numel = 1;
};
BroadcastPlan make_broadcast_plan(const Shape& a, const Shape& b, const Shape& out);

// Where row `o` of the plan's outer index space (every dimension but the innermost) starts in an
// operand read with `strides` (p.sa or p.sb). The CPU loops call it once per inner run.
inline std::int64_t outer_offset(const BroadcastPlan& p, std::int64_t o, const std::vector<std::int64_t>& strides) {
  std::int64_t offset = 0;
  for (std::size_t d = p.shape.size() - 1; d-- > 0;) {
    offset += (o % p.shape[d]) * strides[d];
    o /= p.shape[d];
  }
  return offset;
}

}  // namespace gattn::ops
