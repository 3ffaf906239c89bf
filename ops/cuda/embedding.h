// Host entries of the CUDA embedding kernels (ops/cuda/embedding.cu), the twins of
// ops/cpu/embedding.h: the row gather and its deterministic backward. Indices must be validated
// first (index_check.h). f32 device pointers; CUDA builds only.
#pragma once

struct CUstream_st;

namespace gattn::cuda {

// out[i, :] = weight[idx[i], :] for i < n.
void embedding_forward_f32(const float* weight, const int* idx, float* out, long long n, long long C,
                           CUstream_st* stream);
// dweight[v, :] = Σ_{i : idx[i] = v} g[i, :] summed in index order (every row written, 0 where no
// index picked it): no atomics, the same bits every run.
void embedding_backward_f32(const float* g, const int* idx, float* dweight, long long n, long long V, long long C,
                            CUstream_st* stream);

}  // namespace gattn::cuda
