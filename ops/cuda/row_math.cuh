// Per-row helpers for the block-per-row kernels (softmax, cross_entropy): the max shift and the
// log-sum-exp of one row, with ops/cpu/softmax.h's rule that an all −inf row shifts by 0.
#pragma once
#include <cuda_runtime.h>

#include "ops/cuda/block_reduce.cuh"

namespace gattn::cuda {

// max_j x[j] over the row, or 0 when that is −inf (so x − shift stays −inf, never NaN).
__device__ inline float row_shift(const float* x, long long C, float* scratch) {
  float m = -INFINITY;
  for (long long j = threadIdx.x; j < C; j += blockDim.x) m = fmaxf(m, x[j]);
  m = block_max(m, scratch);
  return m == -INFINITY ? 0.0f : m;
}

// log Σ_j exp(x[j]), max-subtracted; −inf for a fully masked row.
__device__ inline float row_logsumexp(const float* x, long long C, float* scratch) {
  const float m = row_shift(x, C, scratch);
  float s = 0.0f;
  for (long long j = threadIdx.x; j < C; j += blockDim.x) s += expf(x[j] - m);
  s = block_sum(s, scratch);
  return m + logf(s);
}

}  // namespace gattn::cuda
