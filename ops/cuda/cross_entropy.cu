// Fused CUDA cross-entropy. Forward: one block per row computes the row's log-sum-exp and loss
// term; one block then sums the row terms in double through a fixed tree (deterministic) and
// divides by the non-ignored count on the device, so neither pass needs the host. Backward: one
// thread per logit, softmax rebuilt from the saved lse.
#include <cuda_runtime.h>

#include "core/cuda/launch.cuh"
#include "ops/cuda/cross_entropy.h"
#include "ops/cuda/row_math.cuh"
#include "ops/cuda/scratch.h"

namespace gattn::cuda {

namespace {

__global__ void row_kernel(const float* x, const int* t, float* lse, float* row_loss, long long rows, long long V,
                           int ignore_index) {
  __shared__ float scratch[kMaxRowThreads];
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * V;
    const float l = row_logsumexp(xr, V, scratch);
    if (threadIdx.x == 0) {
      lse[r] = l;
      row_loss[r] = t[r] == ignore_index ? 0.0f : l - xr[t[r]];
    }
  }
}

constexpr int kMeanThreads = 1024;

// One block: loss[0] = Σ row_loss over non-ignored rows / their count.
__global__ void mean_kernel(const float* row_loss, const int* t, long long rows, int ignore_index, float* loss,
                            int* count) {
  __shared__ double sums[kMeanThreads];
  __shared__ double counts[kMeanThreads];
  double s = 0.0, n = 0.0;
  for (long long r = threadIdx.x; r < rows; r += blockDim.x) {
    if (t[r] == ignore_index) continue;
    s += static_cast<double>(row_loss[r]);
    n += 1.0;
  }
  s = block_sum(s, sums);
  n = block_sum(n, counts);
  if (threadIdx.x == 0) {
    loss[0] = n > 0.0 ? static_cast<float>(s / n) : 0.0f;
    count[0] = static_cast<int>(n);
  }
}

__global__ void backward_kernel(const float* x, const int* t, const float* lse, const float* g, const int* count,
                                float* dx, long long rows, long long V, int ignore_index) {
  const int c = count[0];
  const float scale = c > 0 ? g[0] / static_cast<float>(c) : 0.0f;
  GATTN_GRID_STRIDE(i, rows * V) {
    const long long r = i / V, j = i % V;
    const int tr = t[r];
    if (tr == ignore_index) {
      dx[i] = 0.0f;
    } else {
      const float p = expf(x[i] - lse[r]) * scale;
      dx[i] = j == tr ? p - scale : p;
    }
  }
}

}  // namespace

void cross_entropy_forward_f32(const float* logits, const int* t, float* lse, float* loss, int* count, long long rows,
                               long long V, int ignore_index, CUstream_st* stream) {
  Scratch row_loss(static_cast<std::size_t>(rows > 0 ? rows : 0) * sizeof(float));
  if (rows > 0) {
    launch(row_kernel, row_grid(rows), row_threads(V), 0, stream, logits, t, lse, row_loss.as<float>(), rows, V,
           ignore_index);
    GATTN_CUDA_LAUNCH_CHECK("cross_entropy row_kernel");
  }
  launch(mean_kernel, 1, kMeanThreads, 0, stream, row_loss.as<float>(), t, rows, ignore_index, loss, count);
  GATTN_CUDA_LAUNCH_CHECK("cross_entropy mean_kernel");
}

void cross_entropy_backward_f32(const float* logits, const int* t, const float* lse, const float* g, const int* count,
                                float* dlogits, long long rows, long long V, int ignore_index, CUstream_st* stream) {
  if (rows <= 0 || V <= 0) return;
  launch(backward_kernel, grid_for(rows * V), kThreads, 0, stream, logits, t, lse, g, count, dlogits, rows, V,
         ignore_index);
  GATTN_CUDA_LAUNCH_CHECK("cross_entropy backward_kernel");
}

}  // namespace gattn::cuda
