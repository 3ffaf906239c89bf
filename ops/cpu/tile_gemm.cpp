// The register-blocked f32 kernel behind tile_gemm (ops/cpu/tile_gemm.h). C is cut into blocks of
// kRows rows × one or two vectors of columns; each block's kRows × 2 accumulators stay in
// registers over the whole inner sum k, which per step loads two vectors of B's row k and
// broadcasts kRows elements of A's column k, the classic outer-product micro-kernel (BLIS,
// OpenBLAS and LIBXSMM are built around the same loop). A is read in place through a row stride
// and a k stride, so a transposed A costs nothing; B is read in place by rows, and a transposed B
// (the attention's q·kᵀ and dO·vᵀ) is first copied into a thread-local [K, N] panel.
//
// Rounding: every C element is Σ_k in order of k, fused multiply-adds from 0, then alpha·Σ
// (+ beta·C): the same bits for any thread count and any place of the block in C.
#include "ops/cpu/tile_gemm.h"

#include <cstdint>
#include <vector>

namespace gattn::cpu {

namespace {

// Lanes per vector and rows per block: the accumulators (kRows × 2 vectors) plus B's two vectors
// and one broadcast must fit the register file (16 vector registers with AVX2, 32 with AVX-512).
#if defined(__AVX512F__)
constexpr int kLanes = 16;
constexpr int kRows = 12;
#elif defined(__AVX__)
constexpr int kLanes = 8;
constexpr int kRows = 6;
#else
constexpr int kLanes = 4;
constexpr int kRows = 6;
#endif

using Vec = float __attribute__((vector_size(kLanes * sizeof(float))));
// The same vector at any float's alignment, for loads and stores in place.
using UnalignedVec = float __attribute__((vector_size(kLanes * sizeof(float)), aligned(alignof(float))));

[[gnu::always_inline]] inline Vec load(const float* p) { return *reinterpret_cast<const UnalignedVec*>(p); }
[[gnu::always_inline]] inline void store(float* p, Vec v) { *reinterpret_cast<UnalignedVec*>(p) = v; }
// x in every lane. Written x − 0 (not 0 + x, which is not x for x = −0) so that it folds to one
// broadcast.
[[gnu::always_inline]] inline Vec broadcast(float x) { return x - Vec{}; }

// Where op(A)'s element (i, k) lies: A[i·row + k·col].
struct Operand {
  const float* A;
  std::int64_t row, col;
};

// C[0..R, 0..NV·kLanes) = alpha · Σ_k op(A)[i, k] · B[k, ·] (+ beta · C). The loops over R and NV
// are unrolled by the compiler so that acc lives in registers (a loop it left rolled would keep
// acc in memory).
template <int R, int NV>
[[gnu::always_inline]] inline void block(std::int64_t K, Operand a, const float* B, std::int64_t ldb, float* C,
                                         std::int64_t ldc, float alpha, float beta) {
  Vec acc[R][NV];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) acc[i][v] = Vec{};
  for (std::int64_t k = 0; k < K; ++k) {
    Vec b[NV];
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) b[v] = load(B + k * ldb + v * kLanes);
    const float* a_k = a.A + k * a.col;
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      const Vec x = broadcast(a_k[i * a.row]);
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) acc[i][v] += x * b[v];
    }
  }
  const Vec va = broadcast(alpha), vb = broadcast(beta);
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) {
      float* c = C + i * ldc + v * kLanes;
      Vec r = va * acc[i][v];
      if (beta == 1.0f)
        r += load(c);
      else if (beta != 0.0f)
        r += vb * load(c);
      store(c, r);
    }
}

// R rows of C, all N columns: blocks of two vectors, then one vector for an odd one.
template <int R>
[[gnu::always_inline]] inline void row_block(std::int64_t N, std::int64_t K, Operand a, const float* B,
                                             std::int64_t ldb, float* C, std::int64_t ldc, float alpha, float beta) {
  std::int64_t j = 0;
  for (; j + 2 * kLanes <= N; j += 2 * kLanes) block<R, 2>(K, a, B + j, ldb, C + j, ldc, alpha, beta);
  if (j < N) block<R, 1>(K, a, B + j, ldb, C + j, ldc, alpha, beta);
}

// The last rows < kRows: one block of exactly that many.
template <int R>
void tail_rows(int rows, std::int64_t N, std::int64_t K, Operand a, const float* B, std::int64_t ldb, float* C,
               std::int64_t ldc, float alpha, float beta) {
  if constexpr (R > 0) {
    if (rows == R)
      row_block<R>(N, K, a, B, ldb, C, ldc, alpha, beta);
    else
      tail_rows<R - 1>(rows, N, K, a, B, ldb, C, ldc, alpha, beta);
  }
}

// B stored [N, K] copied to [K, N] (this thread's buffer, reused across calls).
const float* transposed_panel(const float* B, std::int64_t ldb, std::int64_t N, std::int64_t K) {
  thread_local std::vector<float> panel;
  panel.resize(static_cast<std::size_t>(N * K));
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t k = 0; k < K; ++k) panel[static_cast<std::size_t>(k * N + n)] = B[n * ldb + k];
  return panel.data();
}

}  // namespace

int tile_gemm_lanes() { return kLanes; }

void tile_gemm_f32(const GemmArgs<float>& g) {
  if (g.M == 0 || g.N == 0 || g.K == 0 || g.N % kLanes != 0) {
    blas_gemm<float>(g);
    return;
  }
  const float* B = g.B;
  std::int64_t ldb = g.ldb;
  if (g.trans_b) {
    B = transposed_panel(g.B, g.ldb, g.N, g.K);
    ldb = g.N;
  }
  // op(A)[i, k]: A[i·lda + k], or A[k·lda + i] when transposed.
  const std::int64_t a_row = g.trans_a ? 1 : g.lda, a_col = g.trans_a ? g.lda : 1;
  std::int64_t i = 0;
  for (; i + kRows <= g.M; i += kRows)
    row_block<kRows>(g.N, g.K, {g.A + i * a_row, a_row, a_col}, B, ldb, g.C + i * g.ldc, g.ldc, g.alpha, g.beta);
  if (i < g.M)
    tail_rows<kRows - 1>(static_cast<int>(g.M - i), g.N, g.K, {g.A + i * a_row, a_row, a_col}, B, ldb, g.C + i * g.ldc,
                         g.ldc, g.alpha, g.beta);
}

}  // namespace gattn::cpu
