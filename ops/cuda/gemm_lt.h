// linear's forward through cuBLASLt with the bias (and GELU) folded into the GEMM's epilogue:
// y = x·Wᵀ + b, or y = GELU(x·Wᵀ + b) with the pre-activation written beside it for backward, in
// one kernel instead of a GEMM plus an elementwise pass over the output. Plain C++ (compiled by the
// host compiler); CUDA builds only.
#pragma once

#include "ops/cuda/gemm.h"

struct CUstream_st;

namespace gattn::cuda {

struct LinearEpilogue {
  const float* bias = nullptr;  // [out] f32, or null for no bias
  bool gelu = false;            // GELU (tanh approximation, as ops::gelu) after the bias
  float* pre_gelu = nullptr;    // with gelu: [rows, out] f32 receives x·Wᵀ + b (needed by backward)
};

// y[rows, out] (f32, row-major) = epilogue(x[rows, in] · W[out, in]ᵀ); x and W are f32
// (type f32) or bf16 (type bf16_f32out). Returns false, having queued nothing, when cuBLASLt
// offers no algorithm for this problem (odd alignment, an aux leading dimension that is not a
// multiple of 8): the caller then runs the plain GEMM and applies the epilogue itself.
bool linear_lt(GemmType type, long long rows, long long out, long long in, const void* x, const void* w,
               const LinearEpilogue& epilogue, float* y, CUstream_st* stream);

}  // namespace gattn::cuda
