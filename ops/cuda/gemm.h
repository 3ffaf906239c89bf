// Row-major GEMMs on the GPU through cuBLAS, with the semantics of ops/cpu/gemm.h so matmul and
// linear call either backend the same way. f32 operands run on TF32 tensor cores unless TF32 is
// switched off (tests compare against the CPU at 1e-5 with it off); bf16 operands accumulate in
// f32. Plain C++ (gemm.cpp is compiled by the host compiler); CUDA builds only.
#pragma once

struct CUstream_st;

namespace gattn::cuda {

// f32: every matrix f32. bf16: every matrix bf16 (f32 accumulation). bf16_f32out: A and B bf16,
// C f32 — mixed precision's products, which keep their f32 result without a rounding to bf16.
enum class GemmType : int { f32, bf16, bf16_f32out };

// Whether f32 GEMMs may round their inputs to TF32 (default true). Process-wide.
void set_tf32_enabled(bool on);
bool tf32_enabled();

// C[M,N] = alpha · op(A) · op(B) + beta · C, all row-major device matrices of `type`; op(A) is M×K
// from A stored [M, K] (lda ≥ K) or, with trans_a, [K, M] (lda ≥ M); likewise B. beta = 0 never
// reads C. Throws ValueError when a size exceeds cuBLAS's 32-bit dims.
void gemm(GemmType type, bool trans_a, bool trans_b, long long M, long long N, long long K, float alpha, const void* A,
          long long lda, const void* B, long long ldb, float beta, void* C, long long ldc, CUstream_st* stream);

// For i < batch: C_i = op(X_i) · op(Y_i), X_i = X + i·sx elements etc., every matrix dense. A stride
// of 0 shares that matrix; sc = 0 means C = Σ_i op(X_i) op(Y_i) (accumulated in batch order).
void batched_gemm(GemmType type, long long batch, bool tx, bool ty, long long M, long long N, long long K,
                  const void* X, long long sx, const void* Y, long long sy, void* C, long long sc, CUstream_st* stream);

}  // namespace gattn::cuda
