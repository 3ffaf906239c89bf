// CPU kernel for inverted dropout with a Philox mask that is recomputed, not stored: the forward and
// the backward call the same function with the same stream position, so both see the same mask.
// Pure function over raw buffers (float or double): no Tensor, no autograd, no allocation.
#pragma once
#include <cmath>
#include <cstdint>

#include "core/tensor/philox.h"
#include "ops/cpu/parallel.h"

namespace gattn::cpu {

// The mask rule, shared with the CUDA kernel: element i uses Philox word w = word(offset + i) (block
// (offset + i) / 4, word (offset + i) % 4 of (seed, stream)) and is dropped iff its 24-bit uniform
// (w >> 8) / 2^24 is < p, i.e. iff (w >> 8) < ceil(p · 2^24). Comparing integers against this
// threshold gives the same mask on every device, with no float rounding of p involved, and keeps
// each element with probability 1 − p (to 2^-24). p = 0 drops nothing.
inline std::uint32_t dropout_threshold(double p) { return static_cast<std::uint32_t>(std::ceil(p * 16777216.0)); }

// out[i] = in[i] · scale where element i is kept, 0 where it is dropped. The forward passes x and
// scale = 1/(1−p); the backward passes g and the same scale (d out/d x is that same diagonal).
template <class T>
void dropout_apply(const T* in, T* out, std::int64_t n, std::uint64_t seed, std::uint64_t stream, std::uint64_t offset,
                   std::uint32_t threshold, T scale) {
  if (n <= 0) return;
  const std::uint64_t first = offset / 4, last = (offset + static_cast<std::uint64_t>(n) - 1) / 4;
  const std::int64_t blocks = static_cast<std::int64_t>(last - first + 1);
  // One Philox evaluation per 4 words; blocks are independent, so any thread split gives the same mask.
#pragma omp parallel for schedule(static) if (worth_parallel(n * 8))
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::uint64_t block = first + static_cast<std::uint64_t>(b);
    const Philox4 r = philox_block(seed, stream, block);
    for (int w = 0; w < 4; ++w) {
      const std::uint64_t word = block * 4 + static_cast<std::uint64_t>(w);
      if (word < offset) continue;
      const std::uint64_t i = word - offset;
      if (i >= static_cast<std::uint64_t>(n)) break;
      out[i] = (r.v[w] >> 8) < threshold ? T(0) : in[i] * scale;
    }
  }
}

}  // namespace gattn::cpu
