// Row-major GEMM, and the batched driver the matmul/linear ops use: a loop of GEMMs that folds the
// batch into one GEMM where the layout allows. f32 runs on oneDNN's dnnl_sgemm when the build has
// it (GATTN_WITH_DNNL): on the model's linear layers it is ~1.4× faster than OpenBLAS at 2 threads
// (docs/benchmarks.md, "GEMM libraries"); f64 and a build without oneDNN use OpenBLAS's CBLAS. The
// attention's f32 tile products have a kernel of their own (ops/cpu/tile_gemm.h).
#pragma once
#include <cblas.h>
#if GATTN_WITH_DNNL
#include <dnnl.h>
#endif

#include <climits>
#include <cstdint>
#include <string>
#include <type_traits>

#include "core/tensor/error.h"
#include "ops/cpu/parallel.h"

namespace gattn::cpu {

namespace detail {
// CBLAS takes 32-bit ints (Debian's OpenBLAS is not built with 64-bit indices); refuse rather than
// let a size wrap around.
inline blasint blas_int(std::int64_t v, const char* what) {
  if (v < 0 || v > static_cast<std::int64_t>(INT_MAX))
    throw ValueError(std::string("gemm: ") + what + " " + std::to_string(v) + " exceeds the 32-bit BLAS index range");
  return static_cast<blasint>(v);
}
}  // namespace detail

// The operands of one row-major GEMM, C[M,N] = alpha · op(A) · op(B) + beta · C. op(A) is M×K: A is
// stored [M, K] (lda ≥ K) or, with trans_a, [K, M] (lda ≥ M); likewise op(B) is K×N from B stored
// [K, N] or [N, K]. beta == 0 overwrites C without reading it (BLAS semantics, so C may hold
// garbage). The defaults are the common case, C = A·B; the sizes, pointers and leading dimensions
// have none worth having, so name them all:
//   blas_gemm<T>({.trans_b = true, .M = m, .N = n, .K = k, .A = a, .lda = k, .B = b, .ldb = k, .C = c, .ldc = n});
template <class T>
struct GemmArgs {
  bool trans_a = false, trans_b = false;
  std::int64_t M = 0, N = 0, K = 0;
  T alpha = T(1);
  const T* A = nullptr;
  std::int64_t lda = 0;
  const T* B = nullptr;
  std::int64_t ldb = 0;
  T beta = T(0);
  T* C = nullptr;
  std::int64_t ldc = 0;
};

// One GEMM (GemmArgs), always through OpenBLAS's CBLAS: the f64 and odd-width tile products of the
// fused attention (ops/cpu/tile_gemm.h; for those OpenBLAS beat oneDNN by 5–10 %, docs/benchmarks.md,
// "GEMM libraries"); everything else calls gemm() below.
template <class T>
void blas_gemm(const GemmArgs<T>& g) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "gemm: float or double only");
  if (g.M == 0 || g.N == 0) return;
  if (g.K == 0) {
    // An empty inner sum: BLAS implementations differ on whether they touch C here, so do it ourselves.
    for (std::int64_t i = 0; i < g.M; ++i)
      for (std::int64_t j = 0; j < g.N; ++j) g.C[i * g.ldc + j] = g.beta == T(0) ? T(0) : g.beta * g.C[i * g.ldc + j];
    return;
  }
  const blasint m = detail::blas_int(g.M, "M"), n = detail::blas_int(g.N, "N"), k = detail::blas_int(g.K, "K");
  const blasint la = detail::blas_int(g.lda, "lda"), lb = detail::blas_int(g.ldb, "ldb");
  const blasint lc = detail::blas_int(g.ldc, "ldc");
  const CBLAS_TRANSPOSE ta = g.trans_a ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb = g.trans_b ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, g.alpha, g.A, la, g.B, lb, g.beta, g.C, lc);
  else
    cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, g.alpha, g.A, la, g.B, lb, g.beta, g.C, lc);
}

// The same GEMM as blas_gemm, its GemmArgs fields in order; f32 runs on oneDNN when the build has it.
template <class T>
void gemm(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, T alpha, const T* A,
          std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C, std::int64_t ldc) {
#if GATTN_WITH_DNNL
  if constexpr (std::is_same_v<T, float>) {
    if (M != 0 && N != 0 && K != 0) {
      // Row-major like CBLAS; inside an OpenMP parallel region it runs on the calling thread.
      const dnnl_status_t s =
          dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', detail::blas_int(M, "M"), detail::blas_int(N, "N"),
                     detail::blas_int(K, "K"), alpha, A, detail::blas_int(lda, "lda"), B, detail::blas_int(ldb, "ldb"),
                     beta, C, detail::blas_int(ldc, "ldc"));
      if (s != dnnl_success)
        throw ValueError("gemm: oneDNN's sgemm refused " + std::to_string(M) + "x" + std::to_string(N) + "x" +
                         std::to_string(K) + " (status " + std::to_string(static_cast<int>(s)) + ")");
      return;
    }
  }
#endif
  blas_gemm<T>({.trans_a = trans_a,
                .trans_b = trans_b,
                .M = M,
                .N = N,
                .K = K,
                .alpha = alpha,
                .A = A,
                .lda = lda,
                .B = B,
                .ldb = ldb,
                .beta = beta,
                .C = C,
                .ldc = ldc});
}

// The library f32 GEMMs run on, for --version: "oneDNN 2.6.3" or "OpenBLAS".
inline std::string f32_gemm_library() {
#if GATTN_WITH_DNNL
  const dnnl_version_t* v = dnnl_version();
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
#else
  return "OpenBLAS";
#endif
}

// For i in [0, batch): C_i = op(X_i) · op(Y_i), with X_i = X + i·sx etc., each matrix dense
// (leading dimension = its stored row length). A stride of 0 shares that matrix across the batch;
// sc == 0 means C = Σ_i op(X_i) op(Y_i) (the gradient of an operand shared by every batch).
template <class T>
void batched_gemm(std::int64_t batch, bool tx, bool ty, std::int64_t M, std::int64_t N, std::int64_t K, const T* X,
                  std::int64_t sx, const T* Y, std::int64_t sy, T* C, std::int64_t sc) {
  if (batch == 0 || M == 0 || N == 0) return;
  const std::int64_t ldx = tx ? M : K, ldy = ty ? K : N;
  const bool x_full = sx == M * K, y_full = sy == K * N, c_full = sc == M * N;
  if (batch == 1 || (sx == 0 && sy == 0 && sc == 0)) {
    // One product; with everything shared, the sum over the batch is batch × that product.
    gemm<T>(tx, ty, M, N, K, static_cast<T>(batch), X, ldx, Y, ldy, T(0), C, N);
    return;
  }
  // Shared Y, untransposed batched X and batched C: the stacked X_i are one [batch·M, K] matrix.
  if (sy == 0 && !tx && x_full && c_full) {
    gemm<T>(false, ty, batch * M, N, K, T(1), X, ldx, Y, ldy, T(0), C, N);
    return;
  }
  // Summed C with transposed X and untransposed Y: Σ_i X_iᵀ Y_i is one GEMM over the stacked rows,
  // [batch·K, M]ᵀ · [batch·K, N].
  if (sc == 0 && tx && !ty && x_full && y_full) {
    gemm<T>(true, false, M, N, batch * K, T(1), X, ldx, Y, ldy, T(0), C, N);
    return;
  }
  if (sc == 0) {
    // Accumulate into the one C: sequential (BLAS threads inside each product).
    for (std::int64_t i = 0; i < batch; ++i)
      gemm<T>(tx, ty, M, N, K, T(1), X + i * sx, ldx, Y + i * sy, ldy, i == 0 ? T(0) : T(1), C, N);
    return;
  }
  // Independent products. Many small ones go in parallel over the batch (OpenBLAS's OpenMP build
  // runs single-threaded inside a parallel region); large ones are left to BLAS's own threading.
  const std::int64_t flops = M * N * K;
  const bool small = flops < (std::int64_t{1} << 18);
#pragma omp parallel for schedule(static) if (small && worth_parallel(flops * batch))
  for (std::int64_t i = 0; i < batch; ++i)
    gemm<T>(tx, ty, M, N, K, T(1), X + i * sx, ldx, Y + i * sy, ldy, T(0), C + i * sc, N);
}

// out[j] = Σ_i g[i, j] for a [rows, cols] row-major g (the bias gradient of linear).
template <class T>
void column_sums(const T* g, std::int64_t rows, std::int64_t cols, T* out) {
  // Threads take disjoint column blocks and walk rows, so every read is sequential within a block.
  constexpr std::int64_t kBlock = 256;
  const std::int64_t blocks = (cols + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (blocks > 1 && worth_parallel(rows * cols))
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::int64_t j0 = b * kBlock, j1 = j0 + kBlock < cols ? j0 + kBlock : cols;
    for (std::int64_t j = j0; j < j1; ++j) out[j] = T(0);
    for (std::int64_t i = 0; i < rows; ++i) {
      const T* row = g + i * cols;
      for (std::int64_t j = j0; j < j1; ++j) out[j] += row[j];
    }
  }
}

// y[i, :] = bias for every row (linear's output is prefilled with the bias, then GEMM adds x Wᵀ with beta = 1).
template <class T>
void fill_rows(T* y, std::int64_t rows, std::int64_t cols, const T* bias) {
#pragma omp parallel for schedule(static) if (worth_parallel(rows * cols))
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) y[i * cols + j] = bias[j];
}

}  // namespace gattn::cpu
