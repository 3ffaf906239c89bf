// CPU kernel for masked_fill: out = value where a broadcast i32 mask is nonzero, x elsewhere. The
// backward is the same kernel on g with value 0. Pure function over raw buffers: no Tensor, no autograd.
#pragma once
#include <cstdint>

#include "ops/broadcast.h"
#include "ops/cpu/parallel.h"

namespace gattn::cpu {

// `p` is make_broadcast_plan(x_shape, mask_shape, x_shape): x is read at p.sa (contiguous, since it
// has the output's shape) and the mask at p.sb (0 along broadcast dimensions).
template <class T>
void masked_fill(const ops::BroadcastPlan& p, const T* x, const std::int32_t* mask, T value, T* out) {
  const std::int64_t inner = p.shape.back();
  const std::int64_t im_step = p.sb.back();
  const std::int64_t outer = inner ? p.numel / inner : 0;
#pragma omp parallel for schedule(static) if (worth_parallel(p.numel))
  for (std::int64_t o = 0; o < outer; ++o) {
    const std::int32_t* pm = mask + ops::outer_offset(p, o, p.sb);
    const T* px = x + o * inner;
    T* po = out + o * inner;
    if (im_step == 0) {
      // One mask value for the whole inner run (e.g. a [T, 1] mask): a copy or a fill.
      if (*pm) {
        for (std::int64_t i = 0; i < inner; ++i) po[i] = value;
      } else {
        for (std::int64_t i = 0; i < inner; ++i) po[i] = px[i];
      }
    } else {
      for (std::int64_t i = 0; i < inner; ++i) po[i] = pm[i * im_step] ? value : px[i];
    }
  }
}

}  // namespace gattn::cpu
