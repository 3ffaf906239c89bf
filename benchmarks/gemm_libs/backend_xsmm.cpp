// LIBXSMM 1.17: JIT-generated kernels for small column-major blocks (alpha = 1, beta 0 or 1). They
// are not a GEMM for whole matrices, so this file is the driver: C is cut into blocks, one kernel is
// dispatched per distinct block shape, and the blocks run in parallel with OpenMP, K in blocks
// accumulated with beta = 1. LIBXSMM's own large-GEMM paths would hand these shapes to a BLAS.
#include <libxsmm.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <stdexcept>
#include <vector>

#include "backend.h"

namespace gemm_bench {
namespace {

// Block of the column-major C' (see backend_sgemm): 64 along N × 32 rows of C, K in steps of 256.
// The C block (8 KiB) and the panels of A' and B' it reads (96 KiB) stay in L2, and R = 768,
// N = 128 gives 48 blocks to share between threads.
constexpr int kTileM = 64, kTileN = 32, kTileK = 256;

int n_threads = 1;
std::string last_path;
std::vector<float> copy_a, copy_b;  // an operand transposed by copy where the JIT lacks the flag

libxsmm_smmfunction dispatch(int m, int n, int k, int lda, int ldb, int ldc, float beta, int flags) {
  const libxsmm_blasint lm = m, ln = n, lk = k, la = lda, lb = ldb, lc = ldc;
  const float alpha = 1.0f;
  const int prefetch = LIBXSMM_GEMM_PREFETCH_NONE;  // the kernel then takes exactly (a, b, c)
  return libxsmm_smmdispatch(lm, ln, lk, &la, &lb, &lc, &alpha, &beta, &flags, &prefetch);
}

// dst (rows × cols, column-major, ld = rows) = the transpose of src (cols × rows, column-major, ld).
// An orphaned `omp for`: it shares the GEMM's parallel region, so the copy adds no fork/join.
void transpose_copy(const float* src, int ld, int rows, int cols, float* dst) {
#pragma omp for schedule(static)
  for (int j = 0; j < cols; ++j)
    for (int i = 0; i < rows; ++i)
      dst[static_cast<std::size_t>(j) * rows + i] = src[static_cast<std::size_t>(i) * ld + j];
}

// Size of block `idx` when `total` is cut into `tile`s; index 1 of a plan's kernels is the edge block.
int edge_size(int total, int tile) { return total % tile; }
int is_edge(int idx, int blocks, int total, int tile) { return idx == blocks - 1 && total % tile != 0 ? 1 : 0; }

// The kernels of the last shape (the benchmark repeats each shape, so dispatch once per shape):
// kern[edge m][edge n][edge k][beta 0 / 1].
struct Plan {
  std::array<int, 9> key{};
  bool copy_a = false, copy_b = false;
  libxsmm_smmfunction kern[2][2][2][2] = {};
  std::string path;
};
Plan plan;

void make_plan(const std::array<int, 9>& key, int m, int n, int k, bool ta, bool tb, int la, int lb, int ldc) {
  plan = Plan{};
  plan.key = key;
  const int flags = (ta ? LIBXSMM_GEMM_FLAG_TRANS_A : 0) | (tb ? LIBXSMM_GEMM_FLAG_TRANS_B : 0);
  plan.path = "JIT";
  if (flags != 0 &&
      dispatch(std::min(m, kTileM), std::min(n, kTileN), std::min(k, kTileK), la, lb, ldc, 0.0f, flags) == nullptr) {
    // The JIT refuses this transposition: transpose the operand(s) by copy inside the timed call.
    // Reported in row-major terms: the kernel's A' is the caller's B and vice versa.
    plan.copy_a = ta;
    plan.copy_b = tb;
    plan.path = std::string("JIT after transpose copy of ") + (ta && tb ? "A and B" : ta ? "B" : "A") + " (copy timed)";
    if (ta) la = m, ta = false;
    if (tb) lb = k, tb = false;
  } else if (flags != 0) {
    plan.path = std::string("JIT with ") + (ta ? "TRANS_A" : "") + (ta && tb ? "+" : "") + (tb ? "TRANS_B" : "");
  }
  const int fl = (ta ? LIBXSMM_GEMM_FLAG_TRANS_A : 0) | (tb ? LIBXSMM_GEMM_FLAG_TRANS_B : 0);
  const int ms[2] = {std::min(m, kTileM), edge_size(m, kTileM)}, ns[2] = {std::min(n, kTileN), edge_size(n, kTileN)},
            ks[2] = {std::min(k, kTileK), edge_size(k, kTileK)};
  for (int em = 0; em < 2; ++em)
    for (int en = 0; en < 2; ++en)
      for (int ek = 0; ek < 2; ++ek)
        for (int beta = 0; beta < 2; ++beta) {
          if (ms[em] == 0 || ns[en] == 0 || ks[ek] == 0 || (beta == 1 && k <= kTileK)) continue;
          plan.kern[em][en][ek][beta] = dispatch(ms[em], ns[en], ks[ek], la, lb, ldc, static_cast<float>(beta), fl);
          if (plan.kern[em][en][ek][beta] == nullptr)
            throw std::runtime_error("libxsmm_smmdispatch returned no kernel");
        }
}

}  // namespace

const char* backend_name() { return "xsmm"; }
std::string backend_version() {
  libxsmm_init();
  return std::string("LIBXSMM ") + LIBXSMM_VERSION + " (" + libxsmm_get_target_arch() + ")";
}
void backend_set_threads(int n) {
  n_threads = n;
  omp_set_num_threads(n);
}
std::string backend_path() { return last_path; }

void backend_sgemm(bool trans_a, bool trans_b, int M, int N, int K, const float* A, int lda, const float* B, int ldb,
                   float* C, int ldc) {
  // Row-major C = op(A)·op(B) is, read column-major, C' = op(B)ᵀ·op(A)ᵀ in the same buffer: the
  // kernel's A' is our B (m = N), its B' is our A (n = M), and each row-major transpose stays one.
  const int m = N, n = M, k = K;
  const float* a = B;
  const float* b = A;
  int la = ldb, lb = lda;
  bool ta = trans_b, tb = trans_a;
  const std::array<int, 9> key = {M, N, K, lda, ldb, ldc, trans_a, trans_b, n_threads};
  if (key != plan.key) make_plan(key, m, n, k, ta, tb, la, lb, ldc);
  // Where the JIT lacks a transpose flag the operand is copied transposed first, in the same region.
  const float* a_src = a;
  const float* b_src = b;
  const int la_src = la, lb_src = lb;
  if (plan.copy_a) {
    copy_a.resize(static_cast<std::size_t>(m) * k);
    a = copy_a.data(), la = m, ta = false;  // A'(i,p) was a_src[p + i·la_src]
  }
  if (plan.copy_b) {
    copy_b.resize(static_cast<std::size_t>(k) * n);
    b = copy_b.data(), lb = k, tb = false;  // B'(p,j) was b_src[j + p·lb_src]
  }
  last_path = plan.path;
  const int mb = (m + kTileM - 1) / kTileM, nb = (n + kTileN - 1) / kTileN, kb = (k + kTileK - 1) / kTileK;
#pragma omp parallel num_threads(n_threads)
  {
    if (plan.copy_a) transpose_copy(a_src, la_src, m, k, copy_a.data());  // each ends in a barrier
    if (plan.copy_b) transpose_copy(b_src, lb_src, k, n, copy_b.data());
#pragma omp for collapse(2) schedule(static)
    for (int j = 0; j < nb; ++j)
      for (int i = 0; i < mb; ++i) {
        const std::size_t i0 = static_cast<std::size_t>(i) * kTileM, j0 = static_cast<std::size_t>(j) * kTileN;
        const int em = is_edge(i, mb, m, kTileM), en = is_edge(j, nb, n, kTileN);
        float* c = C + i0 + j0 * ldc;
        for (int p = 0; p < kb; ++p) {
          const std::size_t p0 = static_cast<std::size_t>(p) * kTileK;
          const float* ap = ta ? a + p0 + i0 * la : a + i0 + p0 * la;
          const float* bp = tb ? b + j0 + p0 * lb : b + p0 + j0 * lb;
          plan.kern[em][en][is_edge(p, kb, k, kTileK)][p > 0 ? 1 : 0](ap, bp, c);
        }
      }
  }
}

}  // namespace gemm_bench
