// Host entries of the CUDA copies behind the shape ops (ops/cuda/shape.cu), the twins of
// ops/cpu/shape.h. They only move elements of `elem_size` bytes (2, 4 or 8), so every dtype works.
// CUDA builds only.
#pragma once
#include "ops/cuda/elementwise.h"

struct CUstream_st;

namespace gattn::cuda {

// Views src as [outer, src_len, inner] and dst as [outer, dst_len, inner]; for every o and j < len:
// dst[o, dst_off + j, :] = src[o, src_off + j, :] (one 2-D memcpy on the stream).
void copy_axis_block(const void* src, long long src_len, long long src_off, void* dst, long long dst_len,
                     long long dst_off, long long outer, long long len, long long inner, int elem_size,
                     CUstream_st* stream);

// out (row-major over index.shape, numel elements) = in[Σ_k i_k · index.sa[k]]: the general permute.
void strided_gather(const void* in, void* out, const StridedIndex& index, long long numel, int elem_size,
                    CUstream_st* stream);

}  // namespace gattn::cuda
