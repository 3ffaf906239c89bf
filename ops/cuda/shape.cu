// CUDA copies for the shape ops: axis blocks as one cudaMemcpy2DAsync (rows of len·inner elements
// at the two tensors' pitches; a plain copy when there is one row; a kernel when a pitch exceeds
// the device's limit), permutes as a gather with one thread per output element.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "core/cuda/launch.cuh"
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

// dst[r·dst_row + c] = src[r·src_row + c] for r < rows, c < row: the 2-D copy as a kernel, for rows
// wider than the copy engine's maximum pitch.
template <class U>
__global__ void copy_rows_kernel(const U* src, long long src_row, U* dst, long long dst_row, long long rows,
                                 long long row) {
  GATTN_GRID_STRIDE(i, rows * row) {
    const long long r = i / row, c = i % row;
    dst[r * dst_row + c] = src[r * src_row + c];
  }
}

template <class U>
void copy_rows(const void* src, long long src_row, void* dst, long long dst_row, long long rows, long long row,
               CUstream_st* stream) {
  launch(copy_rows_kernel<U>, grid_for(rows * row), kThreads, 0, stream, static_cast<const U*>(src), src_row,
         static_cast<U*>(dst), dst_row, rows, row);
  GATTN_CUDA_LAUNCH_CHECK("copy_rows_kernel");
}

// The device's largest pitch for cudaMemcpy2D (2^31 − 1 bytes on sm_80/sm_90).
std::size_t max_copy_pitch() {
  int device = 0, pitch = 0;
  GATTN_CUDA_CHECK(cudaGetDevice(&device));
  GATTN_CUDA_CHECK(cudaDeviceGetAttribute(&pitch, cudaDevAttrMaxPitch, device));
  return static_cast<std::size_t>(pitch);
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
  const std::size_t dpitch = static_cast<std::size_t>(dst_len * inner) * es,
                    spitch = static_cast<std::size_t>(src_len * inner) * es;
  if (std::max(dpitch, spitch) > max_copy_pitch()) {
    // Rows past the copy engine's pitch limit (cudaMemcpy2D would fail): the same copy as a kernel.
    const long long src_row = src_len * inner, dst_row = dst_len * inner, row = len * inner;
    switch (elem_size) {
      case 2:
        return copy_rows<std::uint16_t>(s, src_row, d, dst_row, outer, row, stream);
      case 4:
        return copy_rows<std::uint32_t>(s, src_row, d, dst_row, outer, row, stream);
      case 8:
        return copy_rows<std::uint64_t>(s, src_row, d, dst_row, outer, row, stream);
      default:
        throw DTypeError("copy_axis_block: unsupported element size " + std::to_string(elem_size));
    }
  }
  GATTN_CUDA_CHECK(cudaMemcpy2DAsync(d, dpitch, s, spitch, width, static_cast<std::size_t>(outer),
                                     cudaMemcpyDeviceToDevice, stream));
}

void strided_gather(const void* in, void* out, const StridedIndex& index, long long numel, int elem_size,
                    CUstream_st* stream) {
  if (numel <= 0) return;
  switch (elem_size) {
    case 2:
      launch(gather_kernel<std::uint16_t>, grid_for(numel), kThreads, 0, stream, static_cast<const std::uint16_t*>(in),
             static_cast<std::uint16_t*>(out), index, numel);
      break;
    case 4:
      launch(gather_kernel<std::uint32_t>, grid_for(numel), kThreads, 0, stream, static_cast<const std::uint32_t*>(in),
             static_cast<std::uint32_t*>(out), index, numel);
      break;
    case 8:
      launch(gather_kernel<std::uint64_t>, grid_for(numel), kThreads, 0, stream, static_cast<const std::uint64_t*>(in),
             static_cast<std::uint64_t*>(out), index, numel);
      break;
    default:
      throw DTypeError("strided_gather: unsupported element size " + std::to_string(elem_size));
  }
  GATTN_CUDA_LAUNCH_CHECK("gather_kernel");
}

}  // namespace gattn::cuda
