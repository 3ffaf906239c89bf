// CUDA rotary position embedding: one thread per (row, pair), the CPU kernel's formulas
// (ops/cpu/rope.h) in double, so f32 results agree with the CPU's to an ulp or so.
#include <cuda_runtime.h>

#include "core/cuda/launch.cuh"
#include "ops/cuda/rope.h"

namespace gattn::cuda {

namespace {

template <class T>
__global__ void rope_kernel(const T* x, T* y, const std::int32_t* positions, long long outer, long long rows,
                            long long d, double base, double sign) {
  const long long h = d / 2;
  GATTN_GRID_STRIDE(i, outer * rows * h) {
    const long long r = i / h, k = i % h, t = r % rows;
    const double a =
        static_cast<double>(positions[t]) * pow(base, -2.0 * static_cast<double>(k) / static_cast<double>(d));
    const double c = cos(a), s = sign * sin(a);
    const double x0 = static_cast<double>(x[r * d + k]), x1 = static_cast<double>(x[r * d + k + h]);
    y[r * d + k] = static_cast<T>(x0 * c - x1 * s);
    y[r * d + k + h] = static_cast<T>(x1 * c + x0 * s);
  }
}

template <class T>
void rope_rows(const T* x, T* y, const std::int32_t* positions, long long outer, long long rows, long long d,
               double base, bool inverse, CUstream_st* stream) {
  const long long n = outer * rows * (d / 2);
  if (n <= 0) return;
  launch(rope_kernel<T>, grid_for(n), kThreads, 0, stream, x, y, positions, outer, rows, d, base, inverse ? -1.0 : 1.0);
  GATTN_CUDA_LAUNCH_CHECK("rope_kernel");
}

}  // namespace

void rope_rows_f32(const float* x, float* y, const std::int32_t* positions, long long outer, long long rows,
                   long long d, double base, bool inverse, CUstream_st* stream) {
  rope_rows(x, y, positions, outer, rows, d, base, inverse, stream);
}

void rope_rows_f64(const double* x, double* y, const std::int32_t* positions, long long outer, long long rows,
                   long long d, double base, bool inverse, CUstream_st* stream) {
  rope_rows(x, y, positions, outer, rows, d, base, inverse, stream);
}

}  // namespace gattn::cuda
