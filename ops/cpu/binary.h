// CPU kernel for broadcast elementwise binary ops over raw buffers, and the reduction that sums a
// broadcast gradient back to an operand's shape.
#pragma once
#include <cstdint>
#include <vector>

#include "ops/broadcast.h"
#include "ops/cpu/parallel.h"

namespace gattn::cpu {

// out[i] = f(a[ia], b[ib]) over the plan's merged index space.
template <class T, class F>
void broadcast_binary(const ops::BroadcastPlan& p, const T* a, const T* b, T* out, F f) {
  const std::int64_t inner = p.shape.back();
  const std::int64_t ia_step = p.sa.back(), ib_step = p.sb.back();
  const std::int64_t outer = inner ? p.numel / inner : 0;
#pragma omp parallel for schedule(static) if (worth_parallel(p.numel))
  for (std::int64_t o = 0; o < outer; ++o) {
    const T* pa = a + ops::outer_offset(p, o, p.sa);
    const T* pb = b + ops::outer_offset(p, o, p.sb);
    T* po = out + o * inner;
    // Specialised inner loops so the compiler vectorises the common cases.
    if (ia_step == 1 && ib_step == 1) {
      for (std::int64_t i = 0; i < inner; ++i) po[i] = f(pa[i], pb[i]);
    } else if (ia_step == 1 && ib_step == 0) {
      const T vb = *pb;
      for (std::int64_t i = 0; i < inner; ++i) po[i] = f(pa[i], vb);
    } else if (ia_step == 0 && ib_step == 1) {
      const T va = *pa;
      for (std::int64_t i = 0; i < inner; ++i) po[i] = f(va, pb[i]);
    } else {
      for (std::int64_t i = 0; i < inner; ++i) po[i] = f(pa[i * ia_step], pb[i * ib_step]);
    }
  }
}

// out (shape `target`, zero-filled by this function) = sum of g over the dimensions along which
// `target` was broadcast to g's shape.
template <class T>
void sum_to_shape(const T* g, const Shape& g_shape, T* out, const Shape& target) {
  const std::int64_t n_out = shape_numel(target);
  for (std::int64_t i = 0; i < n_out; ++i) out[i] = T(0);
  ops::BroadcastPlan p = ops::make_broadcast_plan(target, g_shape, g_shape);
  const std::int64_t inner = p.shape.back();
  const std::int64_t step = p.sa.back();
  const std::int64_t outer = inner ? p.numel / inner : 0;
  for (std::int64_t o = 0; o < outer; ++o) {
    const T* pg = g + o * inner;
    T* po = out + ops::outer_offset(p, o, p.sa);
    if (step == 1) {
      for (std::int64_t i = 0; i < inner; ++i) po[i] += pg[i];
    } else {
      T s = T(0);
      for (std::int64_t i = 0; i < inner; ++i) s += pg[i];
      *po += s;
    }
  }
}

}  // namespace gattn::cpu
