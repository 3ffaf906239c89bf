// Host entries of the fused CUDA LayerNorm (ops/cuda/layer_norm.cu), the twin of
// ops/cpu/layer_norm.h: forward saves the row mean and 1/σ; backward gives dx, dweight, dbias.
// w and b may be null (no affine part); dx, dw, db may be null when not wanted. f32 device
// pointers; CUDA builds only.
#pragma once

struct CUstream_st;

namespace gattn::cuda {

void layer_norm_forward_f32(const float* x, const float* w, const float* b, float* y, float* mean, float* rstd,
                            long long rows, long long C, double eps, CUstream_st* stream);
void layer_norm_backward_f32(const float* x, const float* w, const float* mean, const float* rstd, const float* g,
                             float* dx, float* dw, float* db, long long rows, long long C, CUstream_st* stream);

}  // namespace gattn::cuda
