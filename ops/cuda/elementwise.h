// Host entries of the CUDA elementwise kernels (ops/cuda/elementwise.cu): broadcast binary
// arithmetic, broadcast copies, scalar affine maps, axpy and fills, over f32 device pointers on the
// given stream. Plain C++ includes this; the definitions exist only in CUDA builds.
#pragma once

#include "ops/op_codes.h"

struct CUstream_st;

namespace gattn::cuda {

// A broadcast loop as ops::BroadcastPlan describes it (merged dims, innermost last), flattened into
// a fixed-size struct that travels to the kernel by value.
constexpr int kMaxDims = 8;
struct StridedIndex {
  int rank = 0;
  long long shape[kMaxDims] = {};
  long long sa[kMaxDims] = {};
  long long sb[kMaxDims] = {};
};

using ops::BinaryOp;  // the code the CPU side dispatches on too

// out[i] = a[ia(i)] op b[ib(i)] for i < numel (out dense in the plan's index space).
void broadcast_binary_f32(BinaryOp op, const StridedIndex& plan, long long numel, const float* a, const float* b,
                          float* out, CUstream_st* stream);
// out[i] = src[ia(i)] * scale (plan.sa only): expanding a reduced gradient back to the input shape.
void broadcast_scale_f32(const StridedIndex& plan, long long numel, const float* src, float scale, float* out,
                         CUstream_st* stream);
// out[i] = mask[ib(i)] != 0 ? value : x[ia(i)] (x has out's shape, so ia(i) = i; the mask broadcasts).
void masked_fill_f32(const StridedIndex& plan, long long numel, const float* x, const int* mask, float value,
                     float* out, CUstream_st* stream);
// y[i] = x[i] * scale + shift (x may be y): mul_scalar, add_scalar, scale_.
void affine_f32(const float* x, float* y, long long n, float scale, float shift, CUstream_st* stream);
// y[i] += alpha * x[i].
void axpy_f32(float* y, float alpha, const float* x, long long n, CUstream_st* stream);
// y[i] = value.
void fill_f32(float* y, float value, long long n, CUstream_st* stream);
// y[r, c] = row[c] for a [rows, cols] y (linear's output prefilled with the bias).
void fill_rows_f32(float* y, long long rows, long long cols, const float* row, CUstream_st* stream);

}  // namespace gattn::cuda
