// Host entries of the fused CUDA gated linear units (ops/cuda/glu.cu), the twin of ops/cpu/glu.h:
// y = act(gate) ⊙ up, and dgate, dup in one pass (either may be null). f32 device pointers of n
// elements; CUDA builds only.
#pragma once
#include "ops/glu_element.h"

struct CUstream_st;

namespace gattn::cuda {

void glu_forward_f32(glu::Activation act, const float* gate, const float* up, float* y, long long n,
                     CUstream_st* stream);
void glu_backward_f32(glu::Activation act, const float* gate, const float* up, const float* g, float* dgate, float* dup,
                      long long n, CUstream_st* stream);

}  // namespace gattn::cuda
