// CPU kernels of linear_gelu's epilogue (ops/matmul.h): the bias and GELU applied to a GEMM's output
// in one pass, and GELU's backward with the bias gradient in one pass, where the composed
// linear + gelu ops take two each (prefill the bias, then GELU; GELU', then column sums). The
// forward keeps t = tanh(u) of every element for the backward, which is then multiply-adds only:
// tanh is most of GELU's cost (a division and a dozen multiply-adds, an exp before the rational
// fit), and recomputing it made the backward pass as slow as the forward (docs/benchmarks.md, "Attention's tile
// products, and GELU's tanh kept").
#pragma once
#include <algorithm>
#include <cstdint>

#include "ops/cpu/parallel.h"
#include "ops/cpu/unary.h"

namespace gattn::cpu {

// For each of `rows` rows of `cols`: pre += bias (in place; bias may be null), t = tanh(u(pre))
// (GeluFn::tanh_of) and y = GELU(pre).
template <class T>
void bias_gelu_forward(T* pre, const T* bias, T* t, T* y, std::int64_t rows, std::int64_t cols) {
#pragma omp parallel for schedule(static) if (worth_parallel(rows * cols * GeluFn::kCost))
  for (std::int64_t r = 0; r < rows; ++r) {
    T* p = pre + r * cols;
    T* out = y + r * cols;
    T* tr = t + r * cols;
    if (bias) {
#pragma omp simd
      for (std::int64_t j = 0; j < cols; ++j) p[j] += bias[j];
    }
#pragma omp simd
    for (std::int64_t j = 0; j < cols; ++j) {
      tr[j] = GeluFn::tanh_of(p[j]);
      out[j] = GeluFn::f_from_tanh(p[j], tr[j]);
    }
  }
}

// The bias gradient's fixed row chunks: partial sums per chunk, added in chunk order, so db does
// not depend on the thread count.
constexpr std::int64_t kBiasGradChunks = 32;
inline std::int64_t bias_grad_chunks(std::int64_t rows) { return std::min(rows, kBiasGradChunks); }

// dpre = g ⊙ GELU'(pre), from the forward's t; with db, also db[j] = Σ_r dpre[r, j]. `scratch`
// holds bias_grad_chunks(rows) · cols elements (only read with db).
template <class T>
void gelu_backward_bias(const T* g, const T* pre, const T* t, T* dpre, T* db, T* scratch, std::int64_t rows,
                        std::int64_t cols) {
  const std::int64_t chunks = rows == 0 ? 0 : bias_grad_chunks(rows);
#pragma omp parallel for schedule(static) if (worth_parallel(rows * cols * 4))
  for (std::int64_t ch = 0; ch < chunks; ++ch) {
    T* part = db ? scratch + ch * cols : nullptr;
    if (part) std::fill(part, part + cols, T(0));
    for (std::int64_t r = ch * rows / chunks; r < (ch + 1) * rows / chunks; ++r) {
      const T* gr = g + r * cols;
      const T* pr = pre + r * cols;
      const T* tr = t + r * cols;
      T* dr = dpre + r * cols;
#pragma omp simd
      for (std::int64_t j = 0; j < cols; ++j) dr[j] = GeluFn::df_from_tanh(gr[j], pr[j], tr[j]);
      if (part) {
#pragma omp simd
        for (std::int64_t j = 0; j < cols; ++j) part[j] += dr[j];
      }
    }
  }
  if (!db) return;
  for (std::int64_t j = 0; j < cols; ++j) db[j] = T(0);
  for (std::int64_t ch = 0; ch < chunks; ++ch)
#pragma omp simd
    for (std::int64_t j = 0; j < cols; ++j) db[j] += scratch[ch * cols + j];
}

}  // namespace gattn::cpu
