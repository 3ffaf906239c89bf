// CPU kernels for the fused LayerNorm over contiguous rows of length C: a forward that saves the
// row mean and 1/σ, and a backward that produces dx, dweight and dbias in one sweep over the rows.
// Pure functions over raw buffers (float or double): no Tensor, no autograd, no allocation.
#pragma once
#include <cmath>
#include <cstdint>

#include "ops/cpu/parallel.h"

namespace gattn::cpu {

// The backward sums dweight/dbias over rows in this many fixed chunks of consecutive rows, one
// partial sum per chunk, then adds the chunks in index order. The chunking depends only on `rows`
// (never on the thread count), so the gradients are bit-identical however many threads run. The row
// sums are simd reductions: their lanes' order is fixed at compile time (deterministic), and a
// plain loop would be one chain of dependent adds, the kernel's bottleneck at C = 128.
constexpr std::int64_t kLayerNormChunks = 64;
inline std::int64_t layer_norm_chunks(std::int64_t rows) { return rows < kLayerNormChunks ? rows : kLayerNormChunks; }
// Scratch elements the backward needs for its partial sums (dweight and dbias per chunk).
inline std::int64_t layer_norm_scratch_size(std::int64_t rows, std::int64_t C) {
  return 2 * layer_norm_chunks(rows) * C;
}

// y = (x − μ) · rstd ⊙ w + b per row, with μ the row mean, σ² the (biased) row variance and
// rstd = 1/√(σ² + eps); mean[r] = μ and rstd[r] are saved for the backward. w and b may be null
// (scale 1, shift 0). The variance uses the centred second pass over the row (still in cache), which
// avoids the cancellation of E[x²] − μ² when |μ| ≫ σ. Requires C ≥ 1.
template <class T>
void layer_norm_forward(const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, std::int64_t rows, std::int64_t C,
                        double eps) {
  const T inv_c = T(1) / static_cast<T>(C);
#pragma omp parallel for schedule(static) if (worth_parallel(rows * C * 4))
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * C;
    T* yr = y + r * C;
    T s = T(0);
#pragma omp simd reduction(+ : s)
    for (std::int64_t j = 0; j < C; ++j) s += xr[j];
    const T mu = s * inv_c;
    T v = T(0);
#pragma omp simd reduction(+ : v)
    for (std::int64_t j = 0; j < C; ++j) {
      const T d = xr[j] - mu;
      v += d * d;
    }
    const T rs = T(1) / std::sqrt(v * inv_c + static_cast<T>(eps));
    mean[r] = mu;
    rstd[r] = rs;
    for (std::int64_t j = 0; j < C; ++j) {
      T h = (xr[j] - mu) * rs;
      if (w) h *= w[j];
      if (b) h += b[j];
      yr[j] = h;
    }
  }
}

// Backward, per row with x̂ = (x − μ)·rstd and ĝ = g ⊙ w:
//   dx = rstd · (ĝ − mean_j(ĝ) − x̂ · mean_j(ĝ ⊙ x̂))
//   dweight = Σ_rows g ⊙ x̂,   dbias = Σ_rows g.
// (dx: y depends on x directly and through μ and rstd; ∂μ/∂x_j = 1/C and ∂rstd/∂x_j = −rstd³ (x_j − μ)/C,
// which collapse to the two row means above.)
// Any of dx, dw, db may be null when that gradient is not needed; w may be null (scale 1).
// `scratch` holds layer_norm_scratch_size(rows, C) elements and is used only when dw or db is wanted.
template <class T>
void layer_norm_backward(const T* x, const T* w, const T* mean, const T* rstd, const T* g, T* dx, T* dw, T* db,
                         T* scratch, std::int64_t rows, std::int64_t C) {
  const bool want_params = dw || db;
  const std::int64_t chunks = layer_norm_chunks(rows);
  const T inv_c = T(1) / static_cast<T>(C);
#pragma omp parallel for schedule(static) if (worth_parallel(rows * C * 8))
  for (std::int64_t ch = 0; ch < chunks; ++ch) {
    T* pw = want_params ? scratch + ch * 2 * C : nullptr;
    T* pb = want_params ? pw + C : nullptr;
    if (want_params)
      for (std::int64_t j = 0; j < 2 * C; ++j) pw[j] = T(0);
    const std::int64_t r0 = ch * rows / chunks, r1 = (ch + 1) * rows / chunks;
    for (std::int64_t r = r0; r < r1; ++r) {
      const T* xr = x + r * C;
      const T* gr = g + r * C;
      const T mu = mean[r], rs = rstd[r];
      if (dx) {
        T s_g = T(0), s_gx = T(0);
#pragma omp simd reduction(+ : s_g, s_gx)
        for (std::int64_t j = 0; j < C; ++j) {
          const T gh = w ? gr[j] * w[j] : gr[j];
          s_g += gh;
          s_gx += gh * (xr[j] - mu) * rs;
        }
        const T m_g = s_g * inv_c, m_gx = s_gx * inv_c;
        T* dr = dx + r * C;
        for (std::int64_t j = 0; j < C; ++j) {
          const T gh = w ? gr[j] * w[j] : gr[j];
          dr[j] = rs * (gh - m_g - (xr[j] - mu) * rs * m_gx);
        }
      }
      if (want_params) {
        for (std::int64_t j = 0; j < C; ++j) {
          pw[j] += gr[j] * (xr[j] - mu) * rs;
          pb[j] += gr[j];
        }
      }
    }
  }
  if (!want_params) return;
    // Chunks added in index order: deterministic. Parallel over columns, each column independent.
#pragma omp parallel for schedule(static) if (worth_parallel(chunks * C * 2))
  for (std::int64_t j = 0; j < C; ++j) {
    T sw = T(0), sb = T(0);
    for (std::int64_t ch = 0; ch < chunks; ++ch) {
      sw += scratch[ch * 2 * C + j];
      sb += scratch[ch * 2 * C + C + j];
    }
    if (dw) dw[j] = sw;
    if (db) db[j] = sb;
  }
}

}  // namespace gattn::cpu
