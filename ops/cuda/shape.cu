// CUDA copies for the shape ops: axis blocks as one cudaMemcpy2DAsync (rows of len·inner elements
// at the two tensors' pitches; a plain copy when there is one row), permutes as a gather with one
// thread per output element.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "ops/cuda/launch.cuh"
#include "ops/cuda/shape.h"

namespace gattn::cuda {

namespace {

template <class U>
__global__ void gather_kernel(const U* in, U* out, StridedIndex p, long long n) {
  GATTN_GRID_STRIDE(i, n) {
    long long rest = i, off = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      off += (rest % p.shape[d]) * p.sa[d];
      rest /= p.shape[d];
    }
    out[i] = in[off];
  }
}

}  // namespace

void copy_axis_block(const void* src, long long src_len, long long src_off, void* dst, long long dst_len,
                     long long dst_off, long long outer, long long len, long long inner, int elem_size,
                     CUstream_st* stream) {
  if (outer <= 0 || len <= 0 || inner <= 0) return;
  const auto es = static_cast<std::size_t>(elem_size);
  const std::size_t width = static_cast<std::size_t>(len * inner) * es;
  const auto* s = static_cast<const char*>(src) + static_cast<std::size_t>(src_off * inner) * es;
  auto* d = static_cast<char*>(dst) + static_cast<std::size_t>(dst_off * inner) * es;
  if (outer == 1) {  // one contiguous run: a plain copy (2-D copies cap the pitch)
    GATTN_CUDA_CHECK(cudaMemcpyAsync(d, s, width, cudaMemcpyDeviceToDevice, stream));
    return;
  }
  GATTN_CUDA_CHECK(cudaMemcpy2DAsync(d, static_cast<std::size_t>(dst_len * inner) * es, s,
                                     static_cast<std::size_t>(src_len * inner) * es, width, static_cast<std::size_t>(outer),
                                     cudaMemcpyDeviceToDevice, stream));
}

void strided_gather(const void* in, void* out, const StridedIndex& index, long long numel, int elem_size,
                    CUstream_st* stream) {
  if (numel <= 0) return;
  switch (elem_size) {
    case 2:
      gather_kernel<<<grid_for(numel), kThreads, 0, stream>>>(static_cast<const std::uint16_t*>(in),
                                                              static_cast<std::uint16_t*>(out), index, numel);
      break;
    case 4:
      gather_kernel<<<grid_for(numel), kThreads, 0, stream>>>(static_cast<const std::uint32_t*>(in),
                                                              static_cast<std::uint32_t*>(out), index, numel);
      break;
    case 8:
      gather_kernel<<<grid_for(numel), kThreads, 0, stream>>>(static_cast<const std::uint64_t*>(in),
                                                              static_cast<std::uint64_t*>(out), index, numel);
      break;
    default: throw DTypeError("strided_gather: unsupported element size " + std::to_string(elem_size));
  }
  GATTN_CUDA_LAUNCH_CHECK("gather_kernel");
}

}  // namespace gattn::cuda
