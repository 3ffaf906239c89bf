// CPU kernel of cached attention (generation): a few new queries against a key/value cache. One
// pass per query row over its visible keys: scores, max, exp, sum, then the weighted sum of values.
// Cost O(visible keys · d) per query; no T×T matrix, no allocation per row (one scratch row per
// thread).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ops/cpu/parallel.h"

namespace gattn::cpu {

template <class T>
struct CachedAttentionParams {
  std::int64_t BH = 0, Tq = 0, length = 0, capacity = 0, d = 0;
  std::int64_t window = 0;  // 0: full causal; w > 0: keys i − w < j ≤ i
  T scale = 1;              // 1/√d
  const T* q = nullptr;     // [BH, Tq, d]: query t sits at position length − Tq + t
  const T* k = nullptr;     // [BH, capacity, d], rows 0 … length−1 valid
  const T* v = nullptr;
  const T* row_bias = nullptr;        // [BH, Tq] or null
  const T* col_bias = nullptr;        // [BH, capacity] or null
  const T* modulation_row = nullptr;  // [BH, Tq] or null (then modulation_col is null too)
  const T* modulation_col = nullptr;  // [BH, capacity]
  T alpha = 0, inv_tau = 1;
  bool hard = false;  // a hard modulation: 1[G > hard_threshold] in place of G
  T hard_threshold = T(0.5);
  T* out = nullptr;  // [BH, Tq, d]
};

template <class T>
void cached_attention_forward(const CachedAttentionParams<T>& p) {
  const std::int64_t rows = p.BH * p.Tq, d = p.d, first = p.length - p.Tq;
  const bool parallel =
      rows > 1 && worth_parallel(rows * std::min(p.length, p.window > 0 ? p.window : p.length) * d * 2);
#pragma omp parallel if (parallel)
  {
    std::vector<T> w(static_cast<std::size_t>(p.length));  // this thread's scratch row
#pragma omp for schedule(static)
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t bh = r / p.Tq, t = r % p.Tq, i = first + t;
      const std::int64_t lo = p.window > 0 ? std::max<std::int64_t>(0, i - p.window + 1) : 0;
      const T* qi = p.q + r * d;
      const T* kb = p.k + bh * p.capacity * d;
      const T* vb = p.v + bh * p.capacity * d;
      const T* col_bias = p.col_bias ? p.col_bias + bh * p.capacity : nullptr;
      const T ri = p.row_bias ? p.row_bias[r] : T(0);
      T m = -INFINITY;
      for (std::int64_t j = lo; j <= i; ++j) {
        const T* kj = kb + j * d;
        T s = 0;
        for (std::int64_t c = 0; c < d; ++c) s += qi[c] * kj[c];
        s *= p.scale;
        if (col_bias) s += col_bias[j];
        if (p.row_bias) s += ri;
        w[static_cast<std::size_t>(j)] = s;
        m = std::max(m, s);
      }
      T l = 0;
      for (std::int64_t j = lo; j <= i; ++j)
        l += w[static_cast<std::size_t>(j)] = std::exp(w[static_cast<std::size_t>(j)] - m);
      const T inv_l = T(1) / l;
      if (p.modulation_row) {
        // A_ij = P_ij · (α·σ((a_i + b_j)/τ) + 1 − α): the modulation, applied after the softmax.
        const T a = p.modulation_row[r];
        const T* col = p.modulation_col + bh * p.capacity;
        for (std::int64_t j = lo; j <= i; ++j) {
          T g = T(1) / (T(1) + std::exp(-(a + col[j]) * p.inv_tau));
          if (p.hard) g = g > p.hard_threshold ? T(1) : T(0);
          w[static_cast<std::size_t>(j)] *= p.alpha * g + T(1) - p.alpha;
        }
      }
      T* o = p.out + r * d;
      std::fill(o, o + d, T(0));
      for (std::int64_t j = lo; j <= i; ++j) {
        const T a = w[static_cast<std::size_t>(j)] * inv_l;
        const T* vj = vb + j * d;
        for (std::int64_t c = 0; c < d; ++c) o[c] += a * vj[c];
      }
    }
  }
}

}  // namespace gattn::cpu
