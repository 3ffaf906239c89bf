// NumPy-style broadcasting: the result shape of two operands and, per operand, the strides that
// read it at each output position (0 along broadcast dimensions). Shared by the CPU and CUDA paths.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "framework/tensor/tensor.h"

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

}  // namespace gattn::ops
