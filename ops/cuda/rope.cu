// CUDA rotary position embedding: one thread per (row, pair) of the rotated part, and per row element
// past it (copied), the CPU kernel's formulas (ops/cpu/rope.h) in double, so f32 results agree with
// the CPU's to an ulp or so.
#include <cuda_runtime.h>

#include "core/cuda/launch.cuh"
#include "ops/cuda/rope.h"

namespace gattn::cuda {

namespace {

// Per row: items 0 … h−1 rotate the pairs (k, k+h), h = rd/2; items h … h+(d−rd)−1 copy the
// pass-through elements rd … d−1.
template <class T>
__global__ void rope_kernel(const T* x, T* y, const std::int32_t* positions, long long outer, long long rows,
                            long long d, long long rd, double base, double sign) {
  const long long h = rd / 2, per_row = h + (d - rd);
  GATTN_GRID_STRIDE(i, outer * rows * per_row) {
    const long long r = i / per_row, k = i % per_row, t = r % rows;
    if (k >= h) {
      const long long j = rd + (k - h);
      y[r * d + j] = x[r * d + j];
      continue;
    }
    const double a =
        static_cast<double>(positions[t]) * pow(base, -2.0 * static_cast<double>(k) / static_cast<double>(rd));
    const double c = cos(a), s = sign * sin(a);
    const double x0 = static_cast<double>(x[r * d + k]), x1 = static_cast<double>(x[r * d + k + h]);
    y[r * d + k] = static_cast<T>(x0 * c - x1 * s);
    y[r * d + k + h] = static_cast<T>(x1 * c + x0 * s);
  }
}

template <class T>
void rope_rows(const T* x, T* y, const std::int32_t* positions, long long outer, long long rows, long long d,
               long long rd, double base, bool inverse, CUstream_st* stream) {
  const long long n = outer * rows * (rd / 2 + (d - rd));
  if (n <= 0 || rd <= 0) return;
  launch(rope_kernel<T>, grid_for(n), kThreads, 0, stream, x, y, positions, outer, rows, d, rd, base,
         inverse ? -1.0 : 1.0);
  GATTN_CUDA_LAUNCH_CHECK("rope_kernel");
}

}  // namespace

void rope_rows_f32(const float* x, float* y, const std::int32_t* positions, long long outer, long long rows,
                   long long d, long long rd, double base, bool inverse, CUstream_st* stream) {
  rope_rows(x, y, positions, outer, rows, d, rd, base, inverse, stream);
}

void rope_rows_f64(const double* x, double* y, const std::int32_t* positions, long long outer, long long rows,
                   long long d, long long rd, double base, bool inverse, CUstream_st* stream) {
  rope_rows(x, y, positions, outer, rows, d, rd, base, inverse, stream);
}

}  // namespace gattn::cuda
