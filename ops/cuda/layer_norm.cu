// Fused CUDA LayerNorm. Forward and dx: one block per row, the row sums from deterministic block
// trees (mean, then the centred variance, as the CPU kernel). dweight/dbias: rows are cut into a
// shape-determined number of chunks; one thread per (chunk, column) sums its chunk (coalesced
// across columns), then the chunks are added in index order: no atomics, same bits every run.
#include <cuda_runtime.h>

#include "core/cuda/launch.cuh"
#include "ops/cuda/block_reduce.cuh"
#include "ops/cuda/layer_norm.h"
#include "ops/cuda/scratch.h"

namespace gattn::cuda {

namespace {

__global__ void forward_kernel(const float* x, const float* w, const float* b, float* y, float* mean, float* rstd,
                               long long rows, long long C, float eps) {
  __shared__ float scratch[kMaxRowThreads];
  const float inv_c = 1.0f / static_cast<float>(C);
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * C;
    float s = 0.0f;
    for (long long j = threadIdx.x; j < C; j += blockDim.x) s += xr[j];
    const float mu = block_sum(s, scratch) * inv_c;
    float v = 0.0f;
    for (long long j = threadIdx.x; j < C; j += blockDim.x) {
      const float d = xr[j] - mu;
      v += d * d;
    }
    const float rs = 1.0f / sqrtf(block_sum(v, scratch) * inv_c + eps);
    if (threadIdx.x == 0) {
      mean[r] = mu;
      rstd[r] = rs;
    }
    for (long long j = threadIdx.x; j < C; j += blockDim.x) {
      float h = (xr[j] - mu) * rs;
      if (w) h *= w[j];
      if (b) h += b[j];
      y[r * C + j] = h;
    }
  }
}

// dx = rstd · (ĝ − mean(ĝ) − x̂ · mean(ĝ ⊙ x̂)), ĝ = g ⊙ w.
__global__ void dx_kernel(const float* x, const float* w, const float* mean, const float* rstd, const float* g,
                          float* dx, long long rows, long long C) {
  __shared__ float scratch[kMaxRowThreads];
  const float inv_c = 1.0f / static_cast<float>(C);
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * C;
    const float* gr = g + r * C;
    const float mu = mean[r], rs = rstd[r];
    float s_g = 0.0f, s_gx = 0.0f;
    for (long long j = threadIdx.x; j < C; j += blockDim.x) {
      const float gh = w ? gr[j] * w[j] : gr[j];
      s_g += gh;
      s_gx += gh * (xr[j] - mu) * rs;
    }
    const float m_g = block_sum(s_g, scratch) * inv_c;
    const float m_gx = block_sum(s_gx, scratch) * inv_c;
    for (long long j = threadIdx.x; j < C; j += blockDim.x) {
      const float gh = w ? gr[j] * w[j] : gr[j];
      dx[r * C + j] = rs * (gh - m_g - (xr[j] - mu) * rs * m_gx);
    }
  }
}

// partial[ch][0][j] = Σ_{r in chunk ch} g·x̂, partial[ch][1][j] = Σ g.
__global__ void param_partial_kernel(const float* x, const float* mean, const float* rstd, const float* g,
                                     float* partial, long long rows, long long C, long long chunks) {
  GATTN_GRID_STRIDE(k, chunks * C) {
    const long long ch = k / C, j = k % C;
    const long long r0 = ch * rows / chunks, r1 = (ch + 1) * rows / chunks;
    float sw = 0.0f, sb = 0.0f;
    for (long long r = r0; r < r1; ++r) {
      const float gv = g[r * C + j];
      sw += gv * (x[r * C + j] - mean[r]) * rstd[r];
      sb += gv;
    }
    partial[ch * 2 * C + j] = sw;
    partial[ch * 2 * C + C + j] = sb;
  }
}

__global__ void param_finish_kernel(const float* partial, float* dw, float* db, long long C, long long chunks) {
  GATTN_GRID_STRIDE(j, C) {
    float sw = 0.0f, sb = 0.0f;
    for (long long ch = 0; ch < chunks; ++ch) {
      sw += partial[ch * 2 * C + j];
      sb += partial[ch * 2 * C + C + j];
    }
    if (dw) dw[j] = sw;
    if (db) db[j] = sb;
  }
}

// Enough chunks for ~64K threads, each at least 16 rows; a function of the shape only.
long long param_chunks(long long rows, long long C) {
  long long chunks = 1;
  while (chunks < 1024 && chunks * C < (1 << 16) && rows / (chunks * 2) >= 16) chunks *= 2;
  return chunks;
}

}  // namespace

void layer_norm_forward_f32(const float* x, const float* w, const float* b, float* y, float* mean, float* rstd,
                            long long rows, long long C, double eps, CUstream_st* stream) {
  if (rows <= 0 || C <= 0) return;
  launch(forward_kernel, row_grid(rows), row_threads(C), 0, stream, x, w, b, y, mean, rstd, rows, C,
         static_cast<float>(eps));
  GATTN_CUDA_LAUNCH_CHECK("layer_norm forward_kernel");
}

void layer_norm_backward_f32(const float* x, const float* w, const float* mean, const float* rstd, const float* g,
                             float* dx, float* dw, float* db, long long rows, long long C, CUstream_st* stream) {
  if (C <= 0) return;
  if (rows <= 0) {
    // No rows: the parameter gradients are empty sums, zeros as the CPU kernel writes them.
    const auto bytes = static_cast<std::size_t>(C) * sizeof(float);
    if (dw) GATTN_CUDA_CHECK(cudaMemsetAsync(dw, 0, bytes, stream));
    if (db) GATTN_CUDA_CHECK(cudaMemsetAsync(db, 0, bytes, stream));
    return;
  }
  if (dx) {
    launch(dx_kernel, row_grid(rows), row_threads(C), 0, stream, x, w, mean, rstd, g, dx, rows, C);
    GATTN_CUDA_LAUNCH_CHECK("layer_norm dx_kernel");
  }
  if (dw || db) {
    const long long chunks = param_chunks(rows, C);
    Scratch partial(static_cast<std::size_t>(2 * chunks * C) * sizeof(float));
    launch(param_partial_kernel, grid_for(chunks * C), kThreads, 0, stream, x, mean, rstd, g, partial.as<float>(), rows,
           C, chunks);
    GATTN_CUDA_LAUNCH_CHECK("layer_norm param_partial_kernel");
    launch(param_finish_kernel, grid_for(C), kThreads, 0, stream, partial.as<float>(), dw, db, C, chunks);
    GATTN_CUDA_LAUNCH_CHECK("layer_norm param_finish_kernel");
  }
}

}  // namespace gattn::cuda
