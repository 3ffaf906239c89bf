// CUDA embedding. Forward: one thread per output element. Backward: each vocabulary row is owned
// by one block, which scans the indices in tiles held in shared memory and adds the gradient rows
// that picked it in index order — no atomics, so the sum order never varies. A tile in which no
// index matches is skipped after one __syncthreads_or, which keeps the V·n scan cheap.
#include <cuda_runtime.h>

#include "core/cuda/launch.cuh"
#include "ops/cuda/embedding.h"

namespace gattn::cuda {

namespace {

__global__ void forward_kernel(const float* w, const int* idx, float* out, long long n, long long C) {
  GATTN_GRID_STRIDE(k, n * C) {
    const long long i = k / C, c = k % C;
    out[k] = w[static_cast<long long>(idx[i]) * C + c];
  }
}

constexpr int kTile = kThreads;       // indices per shared-memory tile, one per thread to load
constexpr int kMaxColsPerThread = 8;  // columns a thread accumulates at once (registers)

__global__ void backward_kernel(const float* g, const int* idx, float* dw, long long n, long long V, long long C) {
  __shared__ int tile[kTile];
  for (long long v = blockIdx.x; v < V; v += gridDim.x) {
    // Column passes of up to kMaxColsPerThread · blockDim.x columns, each a full scan of the ids.
    for (long long c0 = 0; c0 < C; c0 += static_cast<long long>(kMaxColsPerThread) * blockDim.x) {
      float acc[kMaxColsPerThread];
      for (int k = 0; k < kMaxColsPerThread; ++k) acc[k] = 0.0f;
      for (long long base = 0; base < n; base += kTile) {
        const long long i = base + threadIdx.x;
        const int id = i < n ? idx[i] : -1;
        tile[threadIdx.x] = id;
        if (__syncthreads_or(id == static_cast<int>(v))) {
          const long long count = n - base < kTile ? n - base : kTile;
          for (long long k = 0; k < count; ++k) {
            if (tile[k] != static_cast<int>(v)) continue;
            const float* gr = g + (base + k) * C;
            for (int m = 0; m < kMaxColsPerThread; ++m) {
              const long long c = c0 + threadIdx.x + static_cast<long long>(m) * blockDim.x;
              if (c < C) acc[m] += gr[c];
            }
          }
        }
        __syncthreads();  // the tile is rewritten next iteration
      }
      for (int m = 0; m < kMaxColsPerThread; ++m) {
        const long long c = c0 + threadIdx.x + static_cast<long long>(m) * blockDim.x;
        if (c < C) dw[v * C + c] = acc[m];
      }
    }
  }
}

}  // namespace

void embedding_forward_f32(const float* weight, const int* idx, float* out, long long n, long long C,
                           CUstream_st* stream) {
  if (n <= 0 || C <= 0) return;
  launch(forward_kernel, grid_for(n * C), kThreads, 0, stream, weight, idx, out, n, C);
  GATTN_CUDA_LAUNCH_CHECK("embedding forward_kernel");
}

void embedding_backward_f32(const float* g, const int* idx, float* dweight, long long n, long long V, long long C,
                            CUstream_st* stream) {
  if (V <= 0 || C <= 0) return;
  launch(backward_kernel, row_grid(V), kTile, 0, stream, g, idx, dweight, n, V, C);
  GATTN_CUDA_LAUNCH_CHECK("embedding backward_kernel");
}

}  // namespace gattn::cuda
