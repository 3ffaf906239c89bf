// Matrix products through OpenBLAS (autograd-aware): plain and batched matmul with transposes,
// and the fused Linear y = x Wᵀ + b.
#pragma once
#include <optional>

#include "core/tensor/tensor.h"

namespace gattn::ops {

// op(a) @ op(b) where op transposes the last two dims when asked. a: [..., M, K] (or [..., K, M]
// with trans_a); b: [K, N] (or [N, K] with trans_b), shared by every batch, or with the same leading
// batch dims as a. Result [..., M, N]. Backward: dA = g·op(b)ᵀ, dB = op(a)ᵀ·g (transposed back
// when the operand was transposed), summed over batches for a shared 2-D b.
Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);

// y = x Wᵀ + b with x [..., in], W [out, in] (stored as models/README.md says), bias [out] or undefined.
// One GEMM forward; backward dx = g W, dW = gᵀ x, db = Σ_rows g.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

// gelu(linear(x, W, b)) (the MLP's first layer). On CUDA one cuBLASLt GEMM with the bias and GELU
// in its epilogue, saving the pre-activation for backward; on the CPU exactly the two ops composed.
Tensor linear_gelu(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

}  // namespace gattn::ops
