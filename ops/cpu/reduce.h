// CPU kernels for reductions over raw buffers: the sum of a [outer, reduced, inner] block view
// (the building block of every sum/mean), the broadcast back that their backward needs, and the
// max over the last axis. Sums accumulate in double so f32 results keep full f32 accuracy, and
// every partition depends on the shape only (never on the thread count), so results are
// bit-for-bit reproducible across thread counts.
#pragma once
#include <algorithm>
#include <cstdint>

#include "ops/broadcast.h"
#include "ops/cpu/parallel.h"

namespace gattn::cpu {

// Tiling constants. kSumTile: columns accumulated together in the inner > 1 case (a stack array of
// doubles, small enough for any thread stack). kSumChunk/kSumMaxChunks: how a long contiguous
// reduction with few outputs is split into independent partial sums for the threads.
constexpr std::int64_t kSumTile = 256;
constexpr std::int64_t kSumChunk = 1 << 14;
constexpr std::int64_t kSumMaxChunks = 64;

// Σ x[r] for r < n in double, vectorised (the simd reduction fixes the association order at
// compile time, so it is still deterministic).
template <class T>
double sum_contiguous(const T* x, std::int64_t n) {
  double s = 0;
#pragma omp simd reduction(+ : s)
  for (std::int64_t r = 0; r < n; ++r) s += static_cast<double>(x[r]);
  return s;
}

// out[o·inner + i] = (Σ_{r<R} x[(o·R + r)·inner + i]) / divisor for o < outer, i < inner.
// divisor is 1 for a sum and R for a mean (R = 0 then gives 0/0 = NaN, the mean of nothing).
template <class T>
void sum_blocks(const T* x, T* out, std::int64_t outer, std::int64_t R, std::int64_t inner, double divisor) {
  const std::int64_t work = outer * R * inner;
  if (inner == 1) {
    if (outer < 8 && R >= 2 * kSumChunk) {
      // Few long rows: split each row into at most kSumMaxChunks pieces summed in parallel, then
      // add the partial sums in order. The split depends on R only.
      const std::int64_t n_chunks = std::min(kSumMaxChunks, (R + kSumChunk - 1) / kSumChunk);
      const std::int64_t chunk = (R + n_chunks - 1) / n_chunks;
      for (std::int64_t o = 0; o < outer; ++o) {
        const T* row = x + o * R;
        double partial[kSumMaxChunks];
#pragma omp parallel for schedule(static)
        for (std::int64_t c = 0; c < n_chunks; ++c) {
          const std::int64_t begin = c * chunk, end = std::min(R, begin + chunk);
          partial[c] = begin < end ? sum_contiguous(row + begin, end - begin) : 0.0;
        }
        double s = 0;
        for (std::int64_t c = 0; c < n_chunks; ++c) s += partial[c];
        out[o] = static_cast<T>(s / divisor);
      }
      return;
    }
#pragma omp parallel for schedule(static) if (worth_parallel(work))
    for (std::int64_t o = 0; o < outer; ++o) out[o] = static_cast<T>(sum_contiguous(x + o * R, R) / divisor);
    return;
  }
  // inner > 1: walk the R rows of each block once, adding a tile of up to kSumTile adjacent
  // columns into a double accumulator (the loop over the tile vectorises).
  const std::int64_t n_tiles = (inner + kSumTile - 1) / kSumTile;
#pragma omp parallel for schedule(static) if (worth_parallel(work))
  for (std::int64_t job = 0; job < outer * n_tiles; ++job) {
    const std::int64_t o = job / n_tiles;
    const std::int64_t i0 = (job % n_tiles) * kSumTile;
    const std::int64_t w = std::min(kSumTile, inner - i0);
    double acc[kSumTile];
    for (std::int64_t j = 0; j < w; ++j) acc[j] = 0;
    const T* block = x + o * R * inner + i0;
    for (std::int64_t r = 0; r < R; ++r) {
      const T* row = block + r * inner;
#pragma omp simd
      for (std::int64_t j = 0; j < w; ++j) acc[j] += static_cast<double>(row[j]);
    }
    T* dst = out + o * inner + i0;
    for (std::int64_t j = 0; j < w; ++j) dst[j] = static_cast<T>(acc[j] / divisor);
  }
}

// out[k] = scale · src[ia(k)] over the plan's index space, where the plan was made with
// make_broadcast_plan(src_shape, src_shape, out_shape): the backward of a sum or mean, which
// copies each output gradient to every element that was reduced into it.
template <class T>
void broadcast_scale(const ops::BroadcastPlan& p, const T* src, T* out, T scale) {
  const std::int64_t inner = p.shape.back();
  const std::int64_t step = p.sa.back();
  const std::int64_t outer = inner ? p.numel / inner : 0;
#pragma omp parallel for schedule(static) if (worth_parallel(p.numel))
  for (std::int64_t o = 0; o < outer; ++o) {
    const T* ps = src + ops::outer_offset(p, o, p.sa);
    T* po = out + o * inner;
    if (step == 0) {
      const T v = *ps * scale;
      for (std::int64_t i = 0; i < inner; ++i) po[i] = v;
    } else {
      for (std::int64_t i = 0; i < inner; ++i) po[i] = ps[i * step] * scale;
    }
  }
}

// out[r] = max_c x[r·cols + c] for r < rows; cols ≥ 1. A NaN anywhere in a row makes its max NaN
// (as numpy's amax), so a diverged value is never hidden.
template <class T>
void amax_rows(const T* x, T* out, std::int64_t rows, std::int64_t cols) {
#pragma omp parallel for schedule(static) if (worth_parallel(rows * cols))
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* row = x + r * cols;
    T m = row[0];
    for (std::int64_t c = 1; c < cols; ++c) {
      const T v = row[c];
      m = (v > m || v != v) ? v : m;
    }
    out[r] = m;
  }
}

}  // namespace gattn::cpu
