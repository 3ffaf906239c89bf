// First out-of-range index on the device: every thread tests its elements and lowers one shared
// result with atomicMin; the minimum is the same whatever order the atomics run in.
#include <cuda_runtime.h>

#include "core/cuda/launch.cuh"
#include "ops/cuda/index_check.h"
#include "ops/cuda/scratch.h"

namespace gattn::cuda {

namespace {

__global__ void init_kernel(unsigned long long* result, unsigned long long value) { *result = value; }

__global__ void scan_kernel(const int* idx, long long n, long long limit, int allowed, bool has_allowed,
                            unsigned long long* result) {
  GATTN_GRID_STRIDE(i, n) {
    const int v = idx[i];
    if ((has_allowed && v == allowed) || (v >= 0 && v < limit)) continue;
    atomicMin(result, static_cast<unsigned long long>(i));
  }
}

}  // namespace

long long first_bad_index_i32(const int* idx, long long n, long long limit, int allowed, bool has_allowed,
                              CUstream_st* stream) {
  if (n <= 0) return -1;
  Scratch result(sizeof(unsigned long long));
  auto* r = result.as<unsigned long long>();
  launch(init_kernel, 1, 1, 0, stream, r, static_cast<unsigned long long>(n));
  GATTN_CUDA_LAUNCH_CHECK("index_check init_kernel");
  launch(scan_kernel, grid_for(n), kThreads, 0, stream, idx, n, limit, allowed, has_allowed, r);
  GATTN_CUDA_LAUNCH_CHECK("index_check scan_kernel");
  unsigned long long host = 0;
  GATTN_CUDA_CHECK(cudaMemcpyAsync(&host, r, sizeof host, cudaMemcpyDeviceToHost, stream));
  GATTN_CUDA_CHECK(cudaStreamSynchronize(stream));
  return host == static_cast<unsigned long long>(n) ? -1 : static_cast<long long>(host);
}

}  // namespace gattn::cuda
