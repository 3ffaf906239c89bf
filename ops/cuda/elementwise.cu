// CUDA elementwise kernels: one thread per output element in grid-stride loops; broadcast operands
// are read through the plan's strides (0 along broadcast dims), decomposed from the innermost dim.
#include <cuda_runtime.h>

#include "core/cuda/launch.cuh"
#include "ops/cuda/elementwise.h"

namespace gattn::cuda {

namespace {

// The offsets of output element i in a and b.
__device__ inline void offsets(const StridedIndex& p, long long i, long long& oa, long long& ob) {
  oa = 0;
  ob = 0;
  for (int d = p.rank - 1; d >= 0; --d) {
    const long long k = i % p.shape[d];
    i /= p.shape[d];
    oa += k * p.sa[d];
    ob += k * p.sb[d];
  }
}

template <BinaryOp Op>
__device__ inline float apply(float x, float y) {
  if constexpr (Op == BinaryOp::add) return x + y;
  if constexpr (Op == BinaryOp::sub) return x - y;
  if constexpr (Op == BinaryOp::mul) return x * y;
  if constexpr (Op == BinaryOp::div) return x / y;
}

template <BinaryOp Op>
__global__ void broadcast_binary_kernel(StridedIndex p, long long n, const float* a, const float* b, float* out) {
  GATTN_GRID_STRIDE(i, n) {
    long long oa, ob;
    offsets(p, i, oa, ob);
    out[i] = apply<Op>(a[oa], b[ob]);
  }
}

// Same-shape operands: no index arithmetic.
template <BinaryOp Op>
__global__ void dense_binary_kernel(long long n, const float* a, const float* b, float* out) {
  GATTN_GRID_STRIDE(i, n) out[i] = apply<Op>(a[i], b[i]);
}

__global__ void broadcast_scale_kernel(StridedIndex p, long long n, const float* src, float scale, float* out) {
  GATTN_GRID_STRIDE(i, n) {
    long long oa, ob;
    offsets(p, i, oa, ob);
    out[i] = src[oa] * scale;
  }
}

__global__ void masked_fill_kernel(StridedIndex p, long long n, const float* x, const int* mask, float value,
                                   float* out) {
  GATTN_GRID_STRIDE(i, n) {
    long long ox, om;
    offsets(p, i, ox, om);
    out[i] = mask[om] ? value : x[ox];
  }
}

__global__ void affine_kernel(const float* x, float* y, long long n, float scale, float shift) {
  GATTN_GRID_STRIDE(i, n) y[i] = x[i] * scale + shift;
}

__global__ void axpy_kernel(float* y, float alpha, const float* x, long long n) {
  GATTN_GRID_STRIDE(i, n) y[i] += alpha * x[i];
}

__global__ void fill_kernel(float* y, float value, long long n) { GATTN_GRID_STRIDE(i, n) y[i] = value; }

__global__ void fill_rows_kernel(float* y, long long rows, long long cols, const float* row) {
  GATTN_GRID_STRIDE(i, rows * cols) y[i] = row[i % cols];
}

bool is_dense(const StridedIndex& p) { return p.rank == 1 && p.sa[0] == 1 && p.sb[0] == 1; }

template <BinaryOp Op>
void launch_binary(const StridedIndex& p, long long n, const float* a, const float* b, float* out, cudaStream_t s) {
  if (is_dense(p))
    launch(dense_binary_kernel<Op>, grid_for(n), kThreads, 0, s, n, a, b, out);
  else
    launch(broadcast_binary_kernel<Op>, grid_for(n), kThreads, 0, s, p, n, a, b, out);
  GATTN_CUDA_LAUNCH_CHECK("broadcast_binary_kernel");
}

}  // namespace

void broadcast_binary_f32(BinaryOp op, const StridedIndex& plan, long long numel, const float* a, const float* b,
                          float* out, CUstream_st* stream) {
  if (numel <= 0) return;
  switch (op) {
    case BinaryOp::add:
      launch_binary<BinaryOp::add>(plan, numel, a, b, out, stream);
      break;
    case BinaryOp::sub:
      launch_binary<BinaryOp::sub>(plan, numel, a, b, out, stream);
      break;
    case BinaryOp::mul:
      launch_binary<BinaryOp::mul>(plan, numel, a, b, out, stream);
      break;
    case BinaryOp::div:
      launch_binary<BinaryOp::div>(plan, numel, a, b, out, stream);
      break;
  }
}

void broadcast_scale_f32(const StridedIndex& plan, long long numel, const float* src, float scale, float* out,
                         CUstream_st* stream) {
  if (numel <= 0) return;
  launch(broadcast_scale_kernel, grid_for(numel), kThreads, 0, stream, plan, numel, src, scale, out);
  GATTN_CUDA_LAUNCH_CHECK("broadcast_scale_kernel");
}

void masked_fill_f32(const StridedIndex& plan, long long numel, const float* x, const int* mask, float value,
                     float* out, CUstream_st* stream) {
  if (numel <= 0) return;
  launch(masked_fill_kernel, grid_for(numel), kThreads, 0, stream, plan, numel, x, mask, value, out);
  GATTN_CUDA_LAUNCH_CHECK("masked_fill_kernel");
}

void affine_f32(const float* x, float* y, long long n, float scale, float shift, CUstream_st* stream) {
  if (n <= 0) return;
  launch(affine_kernel, grid_for(n), kThreads, 0, stream, x, y, n, scale, shift);
  GATTN_CUDA_LAUNCH_CHECK("affine_kernel");
}

void axpy_f32(float* y, float alpha, const float* x, long long n, CUstream_st* stream) {
  if (n <= 0) return;
  launch(axpy_kernel, grid_for(n), kThreads, 0, stream, y, alpha, x, n);
  GATTN_CUDA_LAUNCH_CHECK("axpy_kernel");
}

void fill_f32(float* y, float value, long long n, CUstream_st* stream) {
  if (n <= 0) return;
  launch(fill_kernel, grid_for(n), kThreads, 0, stream, y, value, n);
  GATTN_CUDA_LAUNCH_CHECK("fill_kernel");
}

void fill_rows_f32(float* y, long long rows, long long cols, const float* row, CUstream_st* stream) {
  if (rows <= 0 || cols <= 0) return;
  launch(fill_rows_kernel, grid_for(rows * cols), kThreads, 0, stream, y, rows, cols, row);
  GATTN_CUDA_LAUNCH_CHECK("fill_rows_kernel");
}

}  // namespace gattn::cuda
