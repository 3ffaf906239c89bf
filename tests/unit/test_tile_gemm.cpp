// cpu::tile_gemm (the fused attention's f32 tile products) against a double-precision reference:
// every transpose combination, row counts across the kernel's blocks and tails, widths that take
// the kernel and widths that fall back to BLAS, alpha and the three kinds of beta, and leading
// dimensions wider than the matrices.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "ops/cpu/tile_gemm.h"

namespace {

using gattn::cpu::GemmArgs;

struct Case {
  bool ta, tb;
  std::int64_t M, N, K;
  float alpha, beta;
};

// C = alpha·op(A)·op(B) + beta·C in double, C's old values read only where beta ≠ 0.
std::vector<double> reference(const Case& c, const std::vector<float>& A, std::int64_t lda, const std::vector<float>& B,
                              std::int64_t ldb, const std::vector<float>& C, std::int64_t ldc) {
  std::vector<double> out(C.begin(), C.end());
  for (std::int64_t i = 0; i < c.M; ++i)
    for (std::int64_t j = 0; j < c.N; ++j) {
      double s = 0;
      for (std::int64_t k = 0; k < c.K; ++k) {
        const double a = c.ta ? A[k * lda + i] : A[i * lda + k];
        const double b = c.tb ? B[j * ldb + k] : B[k * ldb + j];
        s += a * b;
      }
      const double old = c.beta == 0.0f ? 0.0 : static_cast<double>(c.beta) * C[i * ldc + j];
      out[i * ldc + j] = c.alpha * s + old;
    }
  return out;
}

void check(const Case& c) {
  std::mt19937 rng(static_cast<unsigned>(c.M * 131 + c.N * 17 + c.K));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  // Leading dimensions 3 wider than the stored rows, so a kernel that assumed dense rows would fail.
  const std::int64_t lda = (c.ta ? c.M : c.K) + 3, ldb = (c.tb ? c.K : c.N) + 3, ldc = c.N + 3;
  std::vector<float> A((c.ta ? c.K : c.M) * lda), B((c.tb ? c.N : c.K) * ldb), C(c.M * ldc);
  for (float& x : A) x = u(rng);
  for (float& x : B) x = u(rng);
  for (float& x : C) x = u(rng);
  if (c.beta == 0.0f)  // beta 0 must overwrite C without reading it
    for (std::int64_t i = 0; i < c.M; ++i)
      for (std::int64_t j = 0; j < c.N; ++j) C[i * ldc + j] = std::numeric_limits<float>::quiet_NaN();
  const std::vector<double> want = reference(c, A, lda, B, ldb, C, ldc);
  gattn::cpu::tile_gemm<float>({.trans_a = c.ta,
                                .trans_b = c.tb,
                                .M = c.M,
                                .N = c.N,
                                .K = c.K,
                                .alpha = c.alpha,
                                .A = A.data(),
                                .lda = lda,
                                .B = B.data(),
                                .ldb = ldb,
                                .beta = c.beta,
                                .C = C.data(),
                                .ldc = ldc});
  for (std::int64_t i = 0; i < c.M; ++i)
    for (std::int64_t j = 0; j < ldc; ++j) {
      const double got = C[i * ldc + j], expect = want[i * ldc + j];
      if (j >= c.N) {  // the padding between rows stays as it was
        ASSERT_EQ(got, expect) << "wrote past column N at (" << i << ", " << j << ")";
        continue;
      }
      ASSERT_NEAR(got, expect, 1e-5 * (1.0 + std::abs(expect)) * std::sqrt(static_cast<double>(c.K)))
          << "ta " << c.ta << " tb " << c.tb << " M " << c.M << " N " << c.N << " K " << c.K << " at (" << i << ", "
          << j << ")";
    }
}

}  // namespace

TEST(TileGemm, MatchesADoubleReferenceOverShapesTransposesAndBetas) {
  const std::int64_t lanes = gattn::cpu::tile_gemm_lanes();
  // Widths: one and several vectors, an odd number of vectors, and widths that are no multiple of
  // the vector (BLAS's path); rows: 1 to 25 covers a full block and every tail for 6 or 12 rows.
  const std::vector<std::int64_t> widths = {lanes, 2 * lanes, 3 * lanes, 64, lanes + 1, 5};
  for (const bool ta : {false, true})
    for (const bool tb : {false, true})
      for (const std::int64_t N : widths)
        for (const std::int64_t M : {1, 5, 6, 7, 12, 13, 25, 64})
          for (const std::int64_t K : {1, 16, 64})
            for (const float beta : {0.0f, 1.0f, -0.5f}) check({ta, tb, M, N, K, 0.125f, beta});
}

TEST(TileGemm, EmptyInnerSumScalesOrZeroesC) {
  for (const float beta : {0.0f, 1.0f, 2.0f}) check({false, true, 7, gattn::cpu::tile_gemm_lanes(), 0, 1.0f, beta});
}

// The same product gives the same bits wherever its block lies in C: the attention's results must
// not depend on how its tiles are cut (row blocks of a causal tile, compact rows).
TEST(TileGemm, EachRowsResultIsIndependentOfTheRowsAroundIt) {
  const std::int64_t N = 2 * gattn::cpu::tile_gemm_lanes(), K = 64, M = 64;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> A(M * K), B(K * N), whole(M * N), part(N);
  for (float& x : A) x = u(rng);
  for (float& x : B) x = u(rng);
  gattn::cpu::tile_gemm<float>(
      {.M = M, .N = N, .K = K, .A = A.data(), .lda = K, .B = B.data(), .ldb = N, .C = whole.data(), .ldc = N});
  for (std::int64_t i = 0; i < M; ++i) {
    gattn::cpu::tile_gemm<float>(
        {.M = 1, .N = N, .K = K, .A = A.data() + i * K, .lda = K, .B = B.data(), .ldb = N, .C = part.data(), .ldc = N});
    for (std::int64_t j = 0; j < N; ++j) ASSERT_EQ(part[j], whole[i * N + j]) << "row " << i << " column " << j;
  }
}
