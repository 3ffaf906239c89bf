// CUDA reductions. sum_blocks splits each reduced run of R elements into `chunks` consecutive
// pieces (a count that depends on the shape only), sums each piece in double (a block tree when
// inner = 1, a thread walking rows when inner > 1, so reads stay coalesced), then adds the pieces
// in index order: deterministic, and parallel even when there are few outputs (a full sum, the
// bias gradient of a linear layer).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/cuda/launch.cuh"
#include "ops/cuda/block_reduce.cuh"
#include "ops/cuda/reduce.h"
#include "ops/cuda/scratch.h"

namespace gattn::cuda {

namespace {

constexpr long long kMinChunkRows = 64;  // a piece shorter than this is not worth its own partial
constexpr long long kMaxChunks = 1024;
constexpr long long kTargetWork = 1 << 16;  // aim for at least this many independent partial sums

long long chunks_for(long long outputs, long long R) {
  long long chunks = 1;
  while (chunks < kMaxChunks && outputs * chunks < kTargetWork && R / (chunks * 2) >= kMinChunkRows) chunks *= 2;
  return chunks;
}

__device__ inline long long chunk_begin(long long c, long long chunks, long long R) { return c * R / chunks; }

// inner == 1: block (o, c) sums x[o·R + r] for r in chunk c into partial[c·outer + o].
__global__ void partial_rows_kernel(const float* x, double* partial, long long outer, long long R, long long chunks) {
  __shared__ double scratch[kThreads];
  for (long long job = blockIdx.x; job < outer * chunks; job += gridDim.x) {
    const long long c = job / outer, o = job % outer;
    const long long r0 = chunk_begin(c, chunks, R), r1 = chunk_begin(c + 1, chunks, R);
    const float* row = x + o * R;
    double s = 0.0;
    for (long long r = r0 + threadIdx.x; r < r1; r += blockDim.x) s += static_cast<double>(row[r]);
    s = block_sum(s, scratch);
    if (threadIdx.x == 0) partial[c * outer + o] = s;
  }
}

// inner > 1: thread (c, o, i) walks the rows of chunk c for column i of block o.
__global__ void partial_cols_kernel(const float* x, double* partial, long long outer, long long R, long long inner,
                                    long long chunks) {
  const long long outputs = outer * inner;
  GATTN_GRID_STRIDE(k, outputs * chunks) {
    const long long c = k / outputs, oi = k % outputs;
    const long long o = oi / inner, i = oi % inner;
    const long long r0 = chunk_begin(c, chunks, R), r1 = chunk_begin(c + 1, chunks, R);
    const float* p = x + o * R * inner + i;
    double s = 0.0;
    for (long long r = r0; r < r1; ++r) s += static_cast<double>(p[r * inner]);
    partial[k] = s;
  }
}

// out[k] = (Σ_c partial[c·outputs + k]) / divisor, pieces added in index order.
__global__ void finish_kernel(const double* partial, float* out, long long outputs, long long chunks, double divisor) {
  GATTN_GRID_STRIDE(k, outputs) {
    double s = 0.0;
    for (long long c = 0; c < chunks; ++c) s += partial[c * outputs + k];
    out[k] = static_cast<float>(s / divisor);
  }
}

__global__ void amax_rows_kernel(const float* x, float* out, long long rows, long long cols) {
  __shared__ float scratch[kThreads];
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* row = x + r * cols;
    float m = -INFINITY;
    for (long long c = threadIdx.x; c < cols; c += blockDim.x) m = nan_max(m, row[c]);
    m = block_max(m, scratch);
    if (threadIdx.x == 0) out[r] = m;
  }
}

__global__ void cumsum_kernel(const float* x, float* y, long long outer, long long n, long long inner, bool reverse) {
  GATTN_GRID_STRIDE(line, outer * inner) {
    const long long o = line / inner, c = line % inner;
    const float* xl = x + o * n * inner + c;
    float* yl = y + o * n * inner + c;
    double s = 0.0;
    for (long long step = 0; step < n; ++step) {
      const long long i = reverse ? n - 1 - step : step;
      s += static_cast<double>(xl[i * inner]);
      yl[i * inner] = static_cast<float>(s);
    }
  }
}

// Partial gate statistics of one block: Σg, Σg², #(g < 0.1), #(g > 0.9) over its grid-stride
// share, in double, reduced by the block's fixed tree; partial[block·4 + k].
__global__ void gate_moments_kernel(const float* g, long long n, double* partial) {
  __shared__ double scratch[kThreads];
  double acc[4] = {0.0, 0.0, 0.0, 0.0};
  GATTN_GRID_STRIDE(i, n) {
    const double v = g[i];
    acc[0] += v;
    acc[1] += v * v;
    acc[2] += v < 0.1 ? 1.0 : 0.0;
    acc[3] += v > 0.9 ? 1.0 : 0.0;
  }
  for (int k = 0; k < 4; ++k) {
    const double total = block_sum(acc[k], scratch);
    if (threadIdx.x == 0) partial[blockIdx.x * 4 + k] = total;
  }
}

}  // namespace

void cumsum_lines_f32(const float* x, float* y, long long outer, long long n, long long inner, bool reverse,
                      CUstream_st* stream) {
  if (outer <= 0 || n <= 0 || inner <= 0) return;
  launch(cumsum_kernel, grid_for(outer * inner), kThreads, 0, stream, x, y, outer, n, inner, reverse);
  GATTN_CUDA_LAUNCH_CHECK("cumsum_kernel");
}

void sum_blocks_f32(const float* x, float* out, long long outer, long long R, long long inner, double divisor,
                    CUstream_st* stream) {
  const long long outputs = outer * inner;
  if (outputs <= 0) return;
  const long long chunks = chunks_for(outputs, R);
  Scratch partial(static_cast<std::size_t>(outputs * chunks) * sizeof(double));
  auto* p = partial.as<double>();
  if (inner == 1) {
    const long long jobs = outer * chunks;
    const unsigned grid = static_cast<unsigned>(jobs < 65535LL * 16 ? jobs : 65535LL * 16);
    launch(partial_rows_kernel, grid, kThreads, 0, stream, x, p, outer, R, chunks);
    GATTN_CUDA_LAUNCH_CHECK("partial_rows_kernel");
  } else {
    launch(partial_cols_kernel, grid_for(outputs * chunks), kThreads, 0, stream, x, p, outer, R, inner, chunks);
    GATTN_CUDA_LAUNCH_CHECK("partial_cols_kernel");
  }
  launch(finish_kernel, grid_for(outputs), kThreads, 0, stream, p, out, outputs, chunks, divisor);
  GATTN_CUDA_LAUNCH_CHECK("finish_kernel");
}

void amax_rows_f32(const float* x, float* out, long long rows, long long cols, CUstream_st* stream) {
  if (rows <= 0) return;
  const unsigned grid = static_cast<unsigned>(rows < 65535LL * 16 ? rows : 65535LL * 16);
  launch(amax_rows_kernel, grid, kThreads, 0, stream, x, out, rows, cols);
  GATTN_CUDA_LAUNCH_CHECK("amax_rows_kernel");
}

void gate_moments_f32(const float* g, long long n, double out[4], CUstream_st* stream) {
  out[0] = out[1] = out[2] = out[3] = 0.0;
  if (n <= 0) return;
  // Few blocks: their partials are what crosses to the host.
  const unsigned blocks = std::min(grid_for(n), 128u);
  Scratch partial(static_cast<std::size_t>(blocks) * 4 * sizeof(double));
  launch(gate_moments_kernel, blocks, kThreads, 0, stream, g, n, partial.as<double>());
  GATTN_CUDA_LAUNCH_CHECK("gate_moments_kernel");
  std::vector<double> host(static_cast<std::size_t>(blocks) * 4);
  GATTN_CUDA_CHECK(
      cudaMemcpyAsync(host.data(), partial.as<double>(), host.size() * sizeof(double), cudaMemcpyDeviceToHost, stream));
  GATTN_CUDA_CHECK(cudaStreamSynchronize(stream));
  for (unsigned b = 0; b < blocks; ++b)
    for (int k = 0; k < 4; ++k) out[k] += host[b * 4 + static_cast<unsigned>(k)];
}

}  // namespace gattn::cuda
