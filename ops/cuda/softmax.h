// Host entries of the CUDA softmax kernels (ops/cuda/softmax.cu), the twins of ops/cpu/softmax.h:
// softmax and log-softmax over contiguous rows of C, forward and backward from the saved output,
// with the same handling of fully masked (all −inf) rows. f32 device pointers; CUDA builds only.
#pragma once

struct CUstream_st;

namespace gattn::cuda {

void softmax_forward_f32(const float* x, float* y, long long rows, long long C, CUstream_st* stream);
void log_softmax_forward_f32(const float* x, float* y, long long rows, long long C, CUstream_st* stream);
void softmax_backward_f32(const float* y, const float* g, float* dx, long long rows, long long C, CUstream_st* stream);
void log_softmax_backward_f32(const float* y, const float* g, float* dx, long long rows, long long C,
                              CUstream_st* stream);

}  // namespace gattn::cuda
