// The element arithmetic of a bf16 reduction over a transport without a bf16 type (MPI's predefined
// datatypes and reduction ops have none): each pair of values is widened to f32, combined, and
// rounded back to bf16 to nearest-even with the tensor core's conversion (core/tensor/bf16.h),
// so a reduction rounds once per combination, as NCCL's bf16 sum rounds once per ring hop. Pure
// functions, so the arithmetic is unit-tested without MPI.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/tensor/bf16.h"
#include "framework/dist/communicator.h"

namespace gattn::dist {

// a ∘ b. Commutative for every op, since MPI is told so and may combine in any order: max and min
// give NaN when either operand is NaN (std::max would give whichever operand came first).
inline bf16 bf16_combine(bf16 a, bf16 b, ReduceOp op) {
  const float x = bf16_to_float(a), y = bf16_to_float(b);
  switch (op) {
    case ReduceOp::sum:
      return float_to_bf16(x + y);
    case ReduceOp::max:
    case ReduceOp::min:
      if (std::isnan(x) || std::isnan(y)) return float_to_bf16(std::numeric_limits<float>::quiet_NaN());
      return float_to_bf16(op == ReduceOp::max ? std::max(x, y) : std::min(x, y));
  }
  return a;
}

// inout[i] = in[i] ∘ inout[i] for n elements: the shape of an MPI user function (MPI_User_function).
inline void bf16_combine_into(const bf16* in, bf16* inout, std::int64_t n, ReduceOp op) {
  for (std::int64_t i = 0; i < n; ++i) inout[i] = bf16_combine(in[i], inout[i], op);
}

}  // namespace gattn::dist
