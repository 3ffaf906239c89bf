// Deterministic block-wide reductions for the row kernels (reduce, softmax, layer_norm,
// cross_entropy): a fixed tree over shared memory, so the association order depends only on the
// block size, never on timing. Every thread of the block must call them (they synchronise).
#pragma once
#include <cuda_runtime.h>

namespace gattn::cuda {

// The sum of v over the block's threads, returned to every thread. `scratch` holds blockDim.x
// values of T; blockDim.x must be a power of two.
template <class T>
__device__ inline T block_sum(T v, T* scratch) {
  scratch[threadIdx.x] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) scratch[threadIdx.x] += scratch[threadIdx.x + s];
    __syncthreads();
  }
  const T total = scratch[0];
  __syncthreads();  // scratch may be reused right after
  return total;
}

// The max of v over the block, NaN if any thread holds NaN; same rules as block_sum.
__device__ inline float nan_max(float a, float b) {
  return (a != a || b != b) ? __int_as_float(0x7fc00000) : fmaxf(a, b);
}

__device__ inline float block_max(float v, float* scratch) {
  scratch[threadIdx.x] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) scratch[threadIdx.x] = nan_max(scratch[threadIdx.x], scratch[threadIdx.x + s]);
    __syncthreads();
  }
  const float m = scratch[0];
  __syncthreads();
  return m;
}

}  // namespace gattn::cuda
