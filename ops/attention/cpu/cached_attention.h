// CPU kernel of cached attention (generation): a few new queries against a key/value cache. One
// pass per query row over its visible keys: scores, max, exp, sum, then the weighted sum of values.
// Cost O(visible keys · d) per query; no T×T matrix, no allocation per row (scratch rows per
// thread). Under a KV budget the rows hold the positions key_positions names, a row may attend to
// its top-k keys only, a skipped row is 0, and the final weights can be summed per key (H2O). A
// key/value head may serve a group of query heads (grouped-query attention), read in place.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

#include "ops/cpu/parallel.h"

namespace gattn::cpu {

template <class T>
struct CachedAttentionParams {
  std::int64_t BH = 0, Tq = 0, length = 0, capacity = 0, d = 0;  // BH: batch · query heads
  std::int64_t group = 1;   // query heads per key/value head: query head bh reads key/value head bh / group
  std::int64_t window = 0;  // 0: full causal; w > 0: keys i − w < j ≤ i
  T scale = 1;              // 1/√d
  const T* q = nullptr;     // [BH, Tq, d]: query t sits at position length − Tq + t
  const T* k = nullptr;     // [BH / group, capacity, d], rows 0 … length−1 valid (as v)
  const T* v = nullptr;
  const T* row_bias = nullptr;        // [BH, Tq] or null
  const T* col_bias = nullptr;        // [BH, capacity] or null
  const T* modulation_row = nullptr;  // [BH, Tq] or null (then modulation_col is null too)
  const T* modulation_col = nullptr;  // [BH, capacity]
  T alpha = 0, inv_tau = 1;
  const T* alpha_by_head = nullptr;  // [BH / batch = H] or null: α per query head (bh % heads)
  std::int64_t heads = 1;            // query heads per sequence, with alpha_by_head
  bool hard = false;                 // a hard modulation: 1[G > hard_threshold] in place of G
  T hard_threshold = T(0.5);
  bool softplus = false;                        // G = softplus(u) = log(1 + eᵘ) instead of σ(u)
  const std::int32_t* key_positions = nullptr;  // [BH, capacity] or null (row j = position j)
  std::int64_t top_k_keys = 0;                  // > 0: only the top-k scores of each row
  const std::int32_t* skip_rows = nullptr;      // [BH, Tq] or null: 1 = output 0, nothing computed
  T* key_attention = nullptr;                   // [BH, capacity] or null: += A_ij
  T* out = nullptr;                             // [BH, Tq, d]
};

// The first cache row query row `i` of head `bh` sees: 0 for full causal attention, else the
// first row whose position is within the window (rows are in position order).
template <class T>
std::int64_t first_visible_row(const CachedAttentionParams<T>& p, std::int64_t bh, std::int64_t i) {
  if (p.window <= 0) return 0;
  if (!p.key_positions) return std::max<std::int64_t>(0, i - p.window + 1);
  const std::int32_t* pos = p.key_positions + bh * p.capacity;
  std::int64_t lo = 0;
  while (lo < i && pos[i] - pos[lo] >= p.window) ++lo;
  return lo;
}

template <class T>
void cached_attention_forward(const CachedAttentionParams<T>& p) {
  const std::int64_t rows = p.BH * p.Tq, d = p.d, first = p.length - p.Tq;
  // Rows of one head add into the same key_attention row: with several new queries, one thread.
  const bool parallel = rows > 1 && !(p.key_attention && p.Tq > 1) &&
                        worth_parallel(rows * std::min(p.length, p.window > 0 ? p.window : p.length) * d * 2);
#pragma omp parallel if (parallel)
  {
    std::vector<T> w(static_cast<std::size_t>(p.length));  // this thread's scratch row
    std::vector<T> ranked(p.top_k_keys > 0 ? static_cast<std::size_t>(p.length) : 0);
#pragma omp for schedule(static)
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t bh = r / p.Tq, t = r % p.Tq, i = first + t;
      T* o = p.out + r * d;
      if (p.skip_rows && p.skip_rows[r]) {
        std::fill(o, o + d, T(0));
        continue;
      }
      const std::int64_t lo = first_visible_row(p, bh, i);
      const T* qi = p.q + r * d;
      const T* kb = p.k + bh / p.group * p.capacity * d;
      const T* vb = p.v + bh / p.group * p.capacity * d;
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
      // Top-k keys: scores below the k-th largest get weight 0 (the maximum is always kept).
      T kth = -INFINITY;
      if (p.top_k_keys > 0 && i - lo + 1 > p.top_k_keys) {
        std::copy(w.begin() + lo, w.begin() + i + 1, ranked.begin());
        const auto end = ranked.begin() + (i - lo + 1);
        std::nth_element(ranked.begin(), ranked.begin() + (p.top_k_keys - 1), end, std::greater<T>());
        kth = ranked[static_cast<std::size_t>(p.top_k_keys - 1)];
      }
      T l = 0;
      for (std::int64_t j = lo; j <= i; ++j) {
        T& wj = w[static_cast<std::size_t>(j)];
        l += wj = wj >= kth ? std::exp(wj - m) : T(0);
      }
      const T inv_l = T(1) / l;
      if (p.modulation_row) {
        // A_ij = P_ij · (α·G + 1 − α), G = σ((a_i + b_j)/τ) (or softplus): the modulation, applied
        // after the softmax.
        const T a = p.modulation_row[r];
        const T* col = p.modulation_col + bh * p.capacity;
        const T alpha = p.alpha_by_head ? p.alpha_by_head[bh % p.heads] : p.alpha;
        for (std::int64_t j = lo; j <= i; ++j) {
          const T u = (a + col[j]) * p.inv_tau;
          T g = p.softplus ? (u > 0 ? u + std::log1p(std::exp(-u)) : std::log1p(std::exp(u)))
                           : T(1) / (T(1) + std::exp(-(a + col[j]) * p.inv_tau));
          if (p.hard) g = g > p.hard_threshold ? T(1) : T(0);
          w[static_cast<std::size_t>(j)] *= alpha * g + T(1) - alpha;
        }
      }
      std::fill(o, o + d, T(0));
      T* accumulated = p.key_attention ? p.key_attention + bh * p.capacity : nullptr;
      for (std::int64_t j = lo; j <= i; ++j) {
        const T a = w[static_cast<std::size_t>(j)] * inv_l;
        if (accumulated) accumulated[j] += a;
        const T* vj = vb + j * d;
        for (std::int64_t c = 0; c < d; ++c) o[c] += a * vj[c];
      }
    }
  }
}

}  // namespace gattn::cpu
