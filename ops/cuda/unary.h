// Host entries of the CUDA elementwise functions (ops/cuda/unary.cu), the twins of ops/cpu/unary.h:
// the same formulas, forward y = f(x) and backward dx = df(g, saved) with saved = x or y as the CPU
// struct's kSavesOutput says. f32 device pointers; CUDA builds only.
#pragma once

#include "ops/op_codes.h"

struct CUstream_st;

namespace gattn::cuda {

using ops::UnaryOp;  // the code the CPU side dispatches on too

void unary_forward_f32(UnaryOp op, const float* x, float* y, long long n, CUstream_st* stream);
void unary_backward_f32(UnaryOp op, const float* g, const float* saved, float* dx, long long n, CUstream_st* stream);

}  // namespace gattn::cuda
