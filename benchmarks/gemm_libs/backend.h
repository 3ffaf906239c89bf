// The one interface each GEMM library implements (backend_<lib>.cpp). bench_gemm_libs.cpp is built
// once per library and linked with exactly one backend file: OpenBLAS and BLIS both export
// cblas_sgemm/sgemm_, so two of them in one executable would silently resolve to whichever the
// linker saw first.
#pragma once
#include <string>

namespace gemm_bench {

// Short name for tables and executable names ("openblas", "blis", "dnnl", "xsmm").
const char* backend_name();
// The library's own version / build string, read at run time where the library offers one.
std::string backend_version();
// Threads the library (or, for LIBXSMM, our OpenMP loop around its kernels) may use.
void backend_set_threads(int n);
// Row-major C[M,N] = op(A)·op(B) with alpha = 1, beta = 0 (C is overwritten, never read).
// op(A) is M×K: A is stored [M,K] (lda ≥ K) or, with trans_a, [K,M] (lda ≥ M); likewise op(B) is
// K×N from B stored [K,N] or, with trans_b, [N,K]. The same contract as gattn::cpu::gemm.
void backend_sgemm(bool trans_a, bool trans_b, int M, int N, int K, const float* A, int lda, const float* B, int ldb,
                   float* C, int ldc);
// How the last backend_sgemm ran when a backend has more than one path (LIBXSMM: JIT kernels or a
// transpose copy first); "" otherwise.
std::string backend_path();

}  // namespace gemm_bench
