// Host entries of the fused CUDA cross-entropy (ops/cuda/cross_entropy.cu), the twin of
// ops/cpu/cross_entropy.h: per-row log-sum-exp (saved; no probabilities are stored), the mean
// over non-ignored rows, and the backward that rebuilds softmax from the saved lse. Targets must be
// validated first (index_check.h). f32 device pointers; CUDA builds only.
#pragma once

struct CUstream_st;

namespace gattn::cuda {

// lse[r] = log Σ_j exp(x_rj); loss[0] = mean over rows with t[r] != ignore_index of lse[r] − x_r,t[r]
// (0 when there are none), summed in double in a fixed order; count[0] = number of such rows.
void cross_entropy_forward_f32(const float* logits, const int* t, float* lse, float* loss, int* count, long long rows,
                               long long V, int ignore_index, CUstream_st* stream);
// dlogits_rj = (exp(x_rj − lse_r) − [j = t_r]) · g[0] / count[0]; 0 on ignored rows and when count is 0.
void cross_entropy_backward_f32(const float* logits, const int* t, const float* lse, const float* g, const int* count,
                                float* dlogits, long long rows, long long V, int ignore_index, CUstream_st* stream);

}  // namespace gattn::cuda
