// Launch helpers shared by the .cu files: the launch itself, grid sizes for grid-stride loops and
// the check after a launch. Only the .cu files include this (compiled by nvcc, or by the host
// compiler in the emulation build, where emulation/kernel_model.h is force-included first).
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "core/cuda/error.h"
#ifdef GATTN_CUDA_EMULATE
#include "emulation/launch.h"
#endif

namespace gattn::cuda {

constexpr int kThreads = 256;

// kernel<<<grid, block, shared_bytes, stream>>>(args…), written as a call so that the emulation
// build, whose compiler has no launch syntax, runs the same line through its fiber scheduler.
template <class... P, class... A>
inline void launch(void (*kernel)(P...), dim3 grid, dim3 block, std::size_t shared_bytes, cudaStream_t stream,
                   A&&... args) {
#ifdef GATTN_CUDA_EMULATE
  ::gattn::emu::launch(kernel, grid, block, shared_bytes, stream, std::forward<A>(args)...);
#else
  // clang-format reads .cuh as C++ and would split the launch chevrons into "> > >".
  // clang-format off
  kernel<<<grid, block, shared_bytes, stream>>>(std::forward<A>(args)...);
  // clang-format on
#endif
}

// Blocks for a grid-stride loop over n items: enough to fill an H100/H200 many times over, capped
// so the grid size never overflows (the loops stride over the rest).
inline unsigned grid_for(long long n, int threads = kThreads) {
  const long long want = (n + threads - 1) / threads;
  const long long cap = 65535LL * 32;
  return static_cast<unsigned>(want < 1 ? 1 : (want > cap ? cap : want));
}

}  // namespace gattn::cuda

// Raises a launch's configuration error (bad grid, too much shared memory) as a CudaError whose
// call is the kernel's name, with the launching file:line.
#define GATTN_CUDA_LAUNCH_CHECK(kernel_name)                                                                    \
  do {                                                                                                          \
    const cudaError_t gattn_launch_status_ = cudaGetLastError();                                                \
    if (gattn_launch_status_ != cudaSuccess)                                                                    \
      ::gattn::cuda::throw_cuda_error(static_cast<int>(gattn_launch_status_), kernel_name, __FILE__, __LINE__); \
  } while (0)

// Grid-stride loop over [0, n).
#define GATTN_GRID_STRIDE(i, n)                                                              \
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<long long>(gridDim.x) * blockDim.x)

namespace gattn::cuda {

// Threads for a kernel that gives each row of `cols` elements to one block: a power of two between
// 32 and kMaxRowThreads, no larger than the row needs (block_reduce.cuh needs a power of two).
constexpr int kMaxRowThreads = 1024;
inline int row_threads(long long cols) {
  int t = 32;
  while (t < kMaxRowThreads && t < cols) t *= 2;
  return t;
}
// Blocks for a row kernel (each block strides over rows beyond the grid).
inline unsigned row_grid(long long rows) {
  const long long cap = 65535LL * 16;
  return static_cast<unsigned>(rows < 1 ? 1 : (rows > cap ? cap : rows));
}

}  // namespace gattn::cuda
