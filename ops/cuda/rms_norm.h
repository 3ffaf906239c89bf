// Host entries of the fused CUDA RMSNorm (ops/cuda/rms_norm.cu), the twin of ops/cpu/rms_norm.h:
// forward saves 1/rms per row; backward gives dx and dweight from one kernel over the rows (plus the
// ordered sum of its per-chunk dweight partials). w may be null (no scale); `offset` scales by 1 + w;
// dx or dw may be null when not wanted. f32 device pointers; CUDA builds only.
#pragma once

struct CUstream_st;

namespace gattn::cuda {

void rms_norm_forward_f32(const float* x, const float* w, float* y, float* rstd, long long rows, long long C,
                          double eps, bool offset, CUstream_st* stream);
void rms_norm_backward_f32(const float* x, const float* w, const float* rstd, const float* g, float* dx, float* dw,
                           long long rows, long long C, bool offset, CUstream_st* stream);

}  // namespace gattn::cuda
