// Fused CUDA RMSNorm. Forward: one block per row, Σx² from a deterministic block tree. Backward: the
// rows are cut into a shape-determined number of chunks of consecutive rows, one block per chunk;
// for each row the block reduces Σ ĝ·x̂, writes dx, and adds g·x̂ into its chunk's dweight partial
// (each column owned by one thread of the block, so the partial is a plain ordered sum). A second
// small kernel adds the chunks in index order: no atomics, same bits every run.
#include <cuda_runtime.h>

#include "core/cuda/launch.cuh"
#include "ops/cuda/block_reduce.cuh"
#include "ops/cuda/rms_norm.h"
#include "ops/cuda/scratch.h"

namespace gattn::cuda {

namespace {

__device__ inline float scale_of(const float* w, long long j, bool offset) { return offset ? 1.0f + w[j] : w[j]; }

// y = (x · rstd) ⊙ s, as the CPU kernel and Hugging Face's LlamaRMSNorm order it.
__global__ void forward_kernel(const float* x, const float* w, float* y, float* rstd, long long rows, long long C,
                               float eps, bool offset) {
  __shared__ float scratch[kMaxRowThreads];
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * C;
    float s = 0.0f;
    for (long long j = threadIdx.x; j < C; j += blockDim.x) s += xr[j] * xr[j];
    const float rs = 1.0f / sqrtf(block_sum(s, scratch) / static_cast<float>(C) + eps);
    if (threadIdx.x == 0) rstd[r] = rs;
    for (long long j = threadIdx.x; j < C; j += blockDim.x)
      y[r * C + j] = w ? xr[j] * rs * scale_of(w, j, offset) : xr[j] * rs;
  }
}

// Chunk ch covers rows [ch·rows/chunks, (ch+1)·rows/chunks). dx = rstd · (ĝ − x̂ · mean(ĝ ⊙ x̂)),
// ĝ = g ⊙ s; partial[ch][j] = Σ_{rows of ch} g·x̂ (when partial is non-null).
__global__ void backward_kernel(const float* x, const float* w, const float* rstd, const float* g, float* dx,
                                float* partial, long long rows, long long C, long long chunks, bool offset) {
  __shared__ float scratch[kMaxRowThreads];
  const float inv_c = 1.0f / static_cast<float>(C);
  for (long long ch = blockIdx.x; ch < chunks; ch += gridDim.x) {
    float* pw = partial ? partial + ch * C : nullptr;
    if (pw)
      for (long long j = threadIdx.x; j < C; j += blockDim.x) pw[j] = 0.0f;
    const long long r0 = ch * rows / chunks, r1 = (ch + 1) * rows / chunks;
    for (long long r = r0; r < r1; ++r) {
      const float* xr = x + r * C;
      const float* gr = g + r * C;
      const float rs = rstd[r];
      if (dx) {
        float s_gx = 0.0f;
        for (long long j = threadIdx.x; j < C; j += blockDim.x) {
          const float gh = w ? gr[j] * scale_of(w, j, offset) : gr[j];
          s_gx += gh * xr[j] * rs;
        }
        const float m_gx = block_sum(s_gx, scratch) * inv_c;
        for (long long j = threadIdx.x; j < C; j += blockDim.x) {
          const float gh = w ? gr[j] * scale_of(w, j, offset) : gr[j];
          dx[r * C + j] = rs * (gh - xr[j] * rs * m_gx);
        }
      }
      // The same thread wrote pw[j] before (same j stride), so no synchronisation is needed.
      if (pw)
        for (long long j = threadIdx.x; j < C; j += blockDim.x) pw[j] += gr[j] * xr[j] * rs;
    }
  }
}

__global__ void dw_finish_kernel(const float* partial, float* dw, long long C, long long chunks) {
  GATTN_GRID_STRIDE(j, C) {
    float s = 0.0f;
    for (long long ch = 0; ch < chunks; ++ch) s += partial[ch * C + j];
    dw[j] = s;
  }
}

// Chunks for the dweight partials: about four blocks per SM of a large GPU, each at least 4 rows,
// and the partials at most 16 MiB; a function of the shape only, so the sums' order is fixed.
long long dw_chunks(long long rows, long long C) {
  long long chunks = 1;
  while (chunks < 512 && chunks * 2 * C <= (1LL << 22) && rows / (chunks * 2) >= 4) chunks *= 2;
  return chunks;
}

}  // namespace

void rms_norm_forward_f32(const float* x, const float* w, float* y, float* rstd, long long rows, long long C,
                          double eps, bool offset, CUstream_st* stream) {
  if (rows <= 0 || C <= 0) return;
  launch(forward_kernel, row_grid(rows), row_threads(C), 0, stream, x, w, y, rstd, rows, C, static_cast<float>(eps),
         offset);
  GATTN_CUDA_LAUNCH_CHECK("rms_norm forward_kernel");
}

void rms_norm_backward_f32(const float* x, const float* w, const float* rstd, const float* g, float* dx, float* dw,
                           long long rows, long long C, bool offset, CUstream_st* stream) {
  if (C <= 0) return;
  if (rows <= 0) {
    // No rows: dweight is an empty sum, zeros as the CPU kernel writes them.
    if (dw) GATTN_CUDA_CHECK(cudaMemsetAsync(dw, 0, static_cast<std::size_t>(C) * sizeof(float), stream));
    return;
  }
  if (!dx && !dw) return;
  if (!dw) {
    // dx alone: every row its own chunk, one block per row as in the forward.
    launch(backward_kernel, row_grid(rows), row_threads(C), 0, stream, x, w, rstd, g, dx, static_cast<float*>(nullptr),
           rows, C, rows, offset);
    GATTN_CUDA_LAUNCH_CHECK("rms_norm backward_kernel");
    return;
  }
  const long long chunks = dw_chunks(rows, C);
  Scratch partial(static_cast<std::size_t>(chunks * C) * sizeof(float));
  launch(backward_kernel, static_cast<unsigned>(chunks), row_threads(C), 0, stream, x, w, rstd, g, dx,
         partial.as<float>(), rows, C, chunks, offset);
  GATTN_CUDA_LAUNCH_CHECK("rms_norm backward_kernel");
  launch(dw_finish_kernel, grid_for(C), kThreads, 0, stream, partial.as<const float>(), dw, C, chunks);
  GATTN_CUDA_LAUNCH_CHECK("rms_norm dw_finish_kernel");
}

}  // namespace gattn::cuda
