// CPU kernels for softmax and log-softmax over contiguous rows of length C, forward and backward.
// Pure functions over raw buffers (float or double): no Tensor, no autograd, no allocation.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>

#include "ops/cpu/fast_math.h"
#include "ops/cpu/parallel.h"

namespace gattn::cpu {

// The max of a row, used as the shift that keeps exp() from overflowing. A row that is entirely
// −inf (every position masked) gives shift 0 instead of −inf, so x − shift stays −inf rather than
// becoming NaN (−inf − −inf).
template <class T>
inline T row_shift(const T* x, std::int64_t C) {
  T m = -std::numeric_limits<T>::infinity();
  // omp simd: lets the compiler vectorise the reduction without -ffast-math.
#pragma omp simd reduction(max : m)
  for (std::int64_t j = 0; j < C; ++j) m = x[j] > m ? x[j] : m;
  return m == -std::numeric_limits<T>::infinity() ? T(0) : m;
}

// log Σ_j exp(x_j), max-subtracted. −inf for a fully masked row (and for C == 0).
template <class T>
inline T row_logsumexp(const T* x, std::int64_t C) {
  const T m = row_shift(x, C);
  T s = T(0);
#pragma omp simd reduction(+ : s)
  for (std::int64_t j = 0; j < C; ++j) s += vexp(x[j] - m);
  return m + std::log(s);
}

// y = exp(x − m) / Σ exp(x − m) per row. A fully masked row has no probability mass anywhere; it
// gets all zeros rather than 0/0 = NaN, so padded attention rows stay finite.
template <class T>
void softmax_forward(const T* x, T* y, std::int64_t rows, std::int64_t C) {
#pragma omp parallel for schedule(static) if (worth_parallel(rows * C * 4))
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * C;
    T* yr = y + r * C;
    const T m = row_shift(xr, C);
    T s = T(0);
#pragma omp simd reduction(+ : s)
    for (std::int64_t j = 0; j < C; ++j) {
      yr[j] = vexp(xr[j] - m);
      s += yr[j];
    }
    const T inv = s > T(0) ? T(1) / s : T(0);
    for (std::int64_t j = 0; j < C; ++j) yr[j] *= inv;
  }
}

// y = x − logsumexp(x) per row. A fully masked row gets −inf everywhere (log of the zeros that
// softmax gives it) instead of −inf − −inf = NaN.
template <class T>
void log_softmax_forward(const T* x, T* y, std::int64_t rows, std::int64_t C) {
#pragma omp parallel for schedule(static) if (worth_parallel(rows * C * 4))
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * C;
    T* yr = y + r * C;
    const T lse = row_logsumexp(xr, C);
    if (lse == -std::numeric_limits<T>::infinity()) {
      for (std::int64_t j = 0; j < C; ++j) yr[j] = lse;
      continue;
    }
    for (std::int64_t j = 0; j < C; ++j) yr[j] = xr[j] - lse;
  }
}

// Softmax backward from the saved output y: dx = y ⊙ (g − Σ_j g_j y_j).
template <class T>
void softmax_backward(const T* y, const T* g, T* dx, std::int64_t rows, std::int64_t C) {
#pragma omp parallel for schedule(static) if (worth_parallel(rows * C * 2))
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* yr = y + r * C;
    const T* gr = g + r * C;
    T* dr = dx + r * C;
    T dot = T(0);
#pragma omp simd reduction(+ : dot)
    for (std::int64_t j = 0; j < C; ++j) dot += gr[j] * yr[j];
    for (std::int64_t j = 0; j < C; ++j) dr[j] = yr[j] * (gr[j] - dot);
  }
}

// Log-softmax backward from the saved output y = log softmax(x): dx = g − exp(y) Σ_j g_j.
template <class T>
void log_softmax_backward(const T* y, const T* g, T* dx, std::int64_t rows, std::int64_t C) {
#pragma omp parallel for schedule(static) if (worth_parallel(rows * C * 4))
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* yr = y + r * C;
    const T* gr = g + r * C;
    T* dr = dx + r * C;
    T sum = T(0);
#pragma omp simd reduction(+ : sum)
    for (std::int64_t j = 0; j < C; ++j) sum += gr[j];
    for (std::int64_t j = 0; j < C; ++j) dr[j] = gr[j] - vexp(yr[j]) * sum;
  }
}

}  // namespace gattn::cpu
