// Multi-tensor AdamW: the tensors of one launch travel by value in the kernel's parameter block,
// with the first block index of each tensor; block b finds its tensor by a short scan and updates
// one chunk of it. Elements are independent, so the result does not depend on the launch shape.
#include <cuda_runtime.h>

#include "core/cuda/launch.cuh"
#include "ops/cuda/adamw.h"

namespace gattn::cuda {

namespace {

constexpr int kTensorsPerLaunch = 32;
constexpr long long kChunk = 4096;  // elements per block

struct LaunchList {
  AdamWTensor t[kTensorsPerLaunch];
  long long first_block[kTensorsPerLaunch + 1];
  int count;
};

__global__ void adamw_kernel(LaunchList list, adamw::Hyper<float> h) {
  const long long b = blockIdx.x;
  int k = 0;
  while (k + 1 < list.count && list.first_block[k + 1] <= b) ++k;
  const AdamWTensor& t = list.t[k];
  const long long begin = (b - list.first_block[k]) * kChunk;
  const long long end = begin + kChunk < t.n ? begin + kChunk : t.n;
  for (long long i = begin + threadIdx.x; i < end; i += blockDim.x)
    adamw::update(t.p[i], t.g[i], t.m[i], t.v[i], h, t.c);
}

void launch_list(LaunchList& list, const adamw::Hyper<float>& h, cudaStream_t stream) {
  const long long blocks = list.first_block[list.count];
  if (blocks == 0) return;
  launch(adamw_kernel, static_cast<unsigned>(blocks), kThreads, 0, stream, list, h);
  GATTN_CUDA_LAUNCH_CHECK("adamw_kernel");
}

}  // namespace

void adamw_multi_tensor_f32(const std::vector<AdamWTensor>& tensors, const adamw::Hyper<float>& hyper,
                            CUstream_st* stream) {
  LaunchList list{};
  list.first_block[0] = 0;
  for (const AdamWTensor& t : tensors) {
    if (t.n <= 0) continue;
    const long long blocks = (t.n + kChunk - 1) / kChunk;
    // A launch ends when its list is full or its grid would exceed the 2^31 − 1 block limit.
    if (list.count == kTensorsPerLaunch || list.first_block[list.count] + blocks > 0x7fffffffLL) {
      launch_list(list, hyper, stream);
      list.count = 0;
    }
    list.t[list.count] = t;
    list.first_block[list.count + 1] = list.first_block[list.count] + blocks;
    ++list.count;
  }
  if (list.count > 0) launch_list(list, hyper, stream);
}

}  // namespace gattn::cuda
