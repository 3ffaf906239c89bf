// CPU kernels for the fused RMSNorm over contiguous rows of length C: a forward that saves 1/rms
// per row, and a backward that produces dx and dweight in one sweep over the rows.
// Pure functions over raw buffers (float or double): no Tensor, no autograd, no allocation.
#pragma once
#include <cmath>
#include <cstdint>

#include "ops/cpu/parallel.h"

namespace gattn::cpu {

// The backward sums dweight over rows in this many fixed chunks of consecutive rows, one partial
// sum per chunk, then adds the chunks in index order: the chunking depends only on `rows`, so
// dweight is bit-identical whatever the thread count (as in ops/cpu/layer_norm.h).
constexpr std::int64_t kRmsNormChunks = 64;
inline std::int64_t rms_norm_chunks(std::int64_t rows) { return rows < kRmsNormChunks ? rows : kRmsNormChunks; }
// Scratch elements the backward needs for its partial sums of dweight.
inline std::int64_t rms_norm_scratch_size(std::int64_t rows, std::int64_t C) { return rms_norm_chunks(rows) * C; }

// The scale a weight element stands for: w, or 1 + w for the zero-centred weight (`offset`).
template <class T>
inline T rms_norm_scale(const T* w, std::int64_t j, bool offset) {
  return offset ? T(1) + w[j] : w[j];
}

// y = (x · rstd) ⊙ s per row, with rstd = 1/√(Σx²/C + eps) and s = w or 1 + w (w null: s = 1).
// The order of operations is Hugging Face's LlamaRMSNorm in f32 (variance = mean(x²), x times
// rsqrt(variance + eps), then times the weight), so an imported model normalises to its numbers.
// rstd[r] is saved for the backward. Requires C ≥ 1.
template <class T>
void rms_norm_forward(const T* x, const T* w, T* y, T* rstd, std::int64_t rows, std::int64_t C, double eps,
                      bool offset) {
#pragma omp parallel for schedule(static) if (worth_parallel(rows * C * 3))
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * C;
    T* yr = y + r * C;
    T s = T(0);
#pragma omp simd reduction(+ : s)
    for (std::int64_t j = 0; j < C; ++j) s += xr[j] * xr[j];
    const T rs = T(1) / std::sqrt(s / static_cast<T>(C) + static_cast<T>(eps));
    rstd[r] = rs;
    if (w)
      for (std::int64_t j = 0; j < C; ++j) yr[j] = xr[j] * rs * rms_norm_scale(w, j, offset);
    else
      for (std::int64_t j = 0; j < C; ++j) yr[j] = xr[j] * rs;
  }
}

// Backward, per row with x̂ = x · rstd and ĝ = g ⊙ s:
//   dx = rstd · (ĝ − x̂ · mean_j(ĝ ⊙ x̂)),   dweight = Σ_rows g ⊙ x̂
// (y depends on x directly and through rstd, ∂rstd/∂x_j = −rstd³ x_j / C; d(1 + w)/dw = 1, so the
// offset changes ĝ only). dx or dw may be null when not wanted; w may be null (s = 1). `scratch`
// holds rms_norm_scratch_size(rows, C) elements and is used only when dw is wanted.
template <class T>
void rms_norm_backward(const T* x, const T* w, const T* rstd, const T* g, T* dx, T* dw, T* scratch, std::int64_t rows,
                       std::int64_t C, bool offset) {
  const std::int64_t chunks = rms_norm_chunks(rows);
  const T inv_c = T(1) / static_cast<T>(C);
#pragma omp parallel for schedule(static) if (worth_parallel(rows * C * 6))
  for (std::int64_t ch = 0; ch < chunks; ++ch) {
    T* pw = dw ? scratch + ch * C : nullptr;
    if (pw)
      for (std::int64_t j = 0; j < C; ++j) pw[j] = T(0);
    const std::int64_t r0 = ch * rows / chunks, r1 = (ch + 1) * rows / chunks;
    for (std::int64_t r = r0; r < r1; ++r) {
      const T* xr = x + r * C;
      const T* gr = g + r * C;
      const T rs = rstd[r];
      if (dx) {
        T s_gx = T(0);
#pragma omp simd reduction(+ : s_gx)
        for (std::int64_t j = 0; j < C; ++j) {
          const T gh = w ? gr[j] * rms_norm_scale(w, j, offset) : gr[j];
          s_gx += gh * xr[j] * rs;
        }
        const T m_gx = s_gx * inv_c;
        T* dr = dx + r * C;
        for (std::int64_t j = 0; j < C; ++j) {
          const T gh = w ? gr[j] * rms_norm_scale(w, j, offset) : gr[j];
          dr[j] = rs * (gh - xr[j] * rs * m_gx);
        }
      }
      if (pw)
        for (std::int64_t j = 0; j < C; ++j) pw[j] += gr[j] * xr[j] * rs;
    }
  }
  if (!dw) return;
    // Chunks added in index order: deterministic. Parallel over columns, each column independent.
#pragma omp parallel for schedule(static) if (worth_parallel(chunks * C))
  for (std::int64_t j = 0; j < C; ++j) {
    T sw = T(0);
    for (std::int64_t ch = 0; ch < chunks; ++ch) sw += scratch[ch * C + j];
    dw[j] = sw;
  }
}

}  // namespace gattn::cpu
