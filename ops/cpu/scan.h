// CPU kernel for the cumulative sum over the middle axis of an [outer, n, inner] block view, forward
// (prefix) or reverse (suffix) — the reverse scan is the forward's backward.
#pragma once
#include <algorithm>
#include <cstdint>

#include "ops/cpu/parallel.h"

namespace gattn::cpu {

// Columns scanned together when inner > 1: their running sums live in a stack array of doubles.
constexpr std::int64_t kScanTile = 256;

// y[o, i, c] = Σ_{l ≤ i} x[o, l, c] (reverse: Σ_{l ≥ i}) for o < outer, i < n, c < inner.
// Running sums are kept in double so a long f32 scan does not drift; each line is summed in a fixed
// order by one thread, so results do not depend on the thread count. x and y may not overlap
// partially (x == y is fine: each element is read before it is written).
template <class T>
void cumsum_lines(const T* x, T* y, std::int64_t outer, std::int64_t n, std::int64_t inner, bool reverse) {
  if (outer == 0 || n == 0 || inner == 0) return;
  const std::int64_t work = outer * n * inner;
  if (inner == 1) {
    // Contiguous lines: one per iteration.
#pragma omp parallel for schedule(static) if (worth_parallel(work) && outer > 1)
    for (std::int64_t o = 0; o < outer; ++o) {
      const T* xl = x + o * n;
      T* yl = y + o * n;
      double s = 0;
      if (!reverse) {
        for (std::int64_t i = 0; i < n; ++i) yl[i] = static_cast<T>(s += static_cast<double>(xl[i]));
      } else {
        for (std::int64_t i = n; i-- > 0;) yl[i] = static_cast<T>(s += static_cast<double>(xl[i]));
      }
    }
    return;
  }
  // Strided lines: walk the scanned axis row by row over a tile of adjacent columns, so the inner
  // loop is contiguous and vectorises. Tasks are (o, column tile) pairs, all independent.
  const std::int64_t n_tiles = (inner + kScanTile - 1) / kScanTile;
#pragma omp parallel for schedule(static) if (worth_parallel(work) && outer * n_tiles > 1)
  for (std::int64_t task = 0; task < outer * n_tiles; ++task) {
    const std::int64_t o = task / n_tiles, c0 = (task % n_tiles) * kScanTile;
    const std::int64_t width = std::min(kScanTile, inner - c0);
    double s[kScanTile];
    std::fill(s, s + width, 0.0);
    for (std::int64_t step = 0; step < n; ++step) {
      const std::int64_t i = reverse ? n - 1 - step : step;
      const T* xr = x + (o * n + i) * inner + c0;
      T* yr = y + (o * n + i) * inner + c0;
      for (std::int64_t c = 0; c < width; ++c) {
        s[c] += static_cast<double>(xr[c]);
        yr[c] = static_cast<T>(s[c]);
      }
    }
  }
}

}  // namespace gattn::cpu
