// CUDA dropout: one thread per Philox block of 4 words, exactly as the CPU kernel walks them
// (core/tensor/philox.h is host-and-device code), so both devices drop the same elements.
#include <cuda_runtime.h>

#include "core/cuda/launch.cuh"
#include "core/tensor/philox.h"
#include "ops/cuda/dropout.h"

namespace gattn::cuda {

namespace {

__global__ void dropout_kernel(const float* in, float* out, unsigned long long n, unsigned long long seed,
                               unsigned long long philox_stream, unsigned long long offset, unsigned threshold,
                               float scale, unsigned long long first, long long blocks) {
  GATTN_GRID_STRIDE(b, blocks) {
    const unsigned long long block = first + static_cast<unsigned long long>(b);
    const Philox4 r = philox_block(seed, philox_stream, block);
    for (int w = 0; w < 4; ++w) {
      const unsigned long long word = block * 4 + static_cast<unsigned long long>(w);
      if (word < offset) continue;
      const unsigned long long i = word - offset;
      if (i >= n) break;
      out[i] = (r.v[w] >> 8) < threshold ? 0.0f : in[i] * scale;
    }
  }
}

}  // namespace

void dropout_apply_f32(const float* in, float* out, long long n, std::uint64_t seed, std::uint64_t philox_stream,
                       std::uint64_t offset, std::uint32_t threshold, float scale, CUstream_st* stream) {
  if (n <= 0) return;
  const std::uint64_t first = offset / 4, last = (offset + static_cast<std::uint64_t>(n) - 1) / 4;
  const long long blocks = static_cast<long long>(last - first + 1);
  launch(dropout_kernel, grid_for(blocks), kThreads, 0, stream, in, out, static_cast<unsigned long long>(n), seed,
         philox_stream, offset, threshold, scale, first, blocks);
  GATTN_CUDA_LAUNCH_CHECK("dropout_kernel");
}

}  // namespace gattn::cuda
