// CUDA softmax and log-softmax: one block per row (row_threads(C) threads), the row's max and sum
// from deterministic block trees, formulas as in ops/cpu/softmax.h.
#include <cuda_runtime.h>

#include "core/cuda/launch.cuh"
#include "ops/cuda/row_math.cuh"
#include "ops/cuda/softmax.h"

namespace gattn::cuda {

namespace {

__global__ void softmax_forward_kernel(const float* x, float* y, long long rows, long long C) {
  __shared__ float scratch[kMaxRowThreads];
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * C;
    float* yr = y + r * C;
    const float m = row_shift(xr, C, scratch);
    float s = 0.0f;
    for (long long j = threadIdx.x; j < C; j += blockDim.x) {
      const float e = expf(xr[j] - m);
      yr[j] = e;
      s += e;
    }
    s = block_sum(s, scratch);
    const float inv = s > 0.0f ? 1.0f / s : 0.0f;  // a fully masked row gets zeros, not 0/0
    for (long long j = threadIdx.x; j < C; j += blockDim.x) yr[j] *= inv;
  }
}

__global__ void log_softmax_forward_kernel(const float* x, float* y, long long rows, long long C) {
  __shared__ float scratch[kMaxRowThreads];
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * C;
    float* yr = y + r * C;
    const float lse = row_logsumexp(xr, C, scratch);
    for (long long j = threadIdx.x; j < C; j += blockDim.x) yr[j] = lse == -INFINITY ? lse : xr[j] - lse;
  }
}

// dx = y ⊙ (g − Σ_j g_j y_j)
__global__ void softmax_backward_kernel(const float* y, const float* g, float* dx, long long rows, long long C) {
  __shared__ float scratch[kMaxRowThreads];
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* yr = y + r * C;
    const float* gr = g + r * C;
    float dot = 0.0f;
    for (long long j = threadIdx.x; j < C; j += blockDim.x) dot += gr[j] * yr[j];
    dot = block_sum(dot, scratch);
    for (long long j = threadIdx.x; j < C; j += blockDim.x) dx[r * C + j] = yr[j] * (gr[j] - dot);
  }
}

// dx = g − exp(y) Σ_j g_j
__global__ void log_softmax_backward_kernel(const float* y, const float* g, float* dx, long long rows, long long C) {
  __shared__ float scratch[kMaxRowThreads];
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* yr = y + r * C;
    const float* gr = g + r * C;
    float sum = 0.0f;
    for (long long j = threadIdx.x; j < C; j += blockDim.x) sum += gr[j];
    sum = block_sum(sum, scratch);
    for (long long j = threadIdx.x; j < C; j += blockDim.x) dx[r * C + j] = gr[j] - expf(yr[j]) * sum;
  }
}

}  // namespace

void softmax_forward_f32(const float* x, float* y, long long rows, long long C, CUstream_st* stream) {
  if (rows <= 0 || C <= 0) return;
  launch(softmax_forward_kernel, row_grid(rows), row_threads(C), 0, stream, x, y, rows, C);
  GATTN_CUDA_LAUNCH_CHECK("softmax_forward_kernel");
}

void log_softmax_forward_f32(const float* x, float* y, long long rows, long long C, CUstream_st* stream) {
  if (rows <= 0 || C <= 0) return;
  launch(log_softmax_forward_kernel, row_grid(rows), row_threads(C), 0, stream, x, y, rows, C);
  GATTN_CUDA_LAUNCH_CHECK("log_softmax_forward_kernel");
}

void softmax_backward_f32(const float* y, const float* g, float* dx, long long rows, long long C, CUstream_st* stream) {
  if (rows <= 0 || C <= 0) return;
  launch(softmax_backward_kernel, row_grid(rows), row_threads(C), 0, stream, y, g, dx, rows, C);
  GATTN_CUDA_LAUNCH_CHECK("softmax_backward_kernel");
}

void log_softmax_backward_f32(const float* y, const float* g, float* dx, long long rows, long long C,
                              CUstream_st* stream) {
  if (rows <= 0 || C <= 0) return;
  launch(log_softmax_backward_kernel, row_grid(rows), row_threads(C), 0, stream, y, g, dx, rows, C);
  GATTN_CUDA_LAUNCH_CHECK("log_softmax_backward_kernel");
}

}  // namespace gattn::cuda
