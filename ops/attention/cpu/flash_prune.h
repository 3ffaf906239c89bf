// The CPU kernels' tile plan for adaptive computation pruning (the bound: ops/attention/prune_plan.h).
// Forward and backward each build it from the same inputs with this one function, so the backward
// skips exactly the tiles the forward skipped and its gradient is the pruned forward's.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "ops/attention/prune_plan.h"
#include "ops/cpu/parallel.h"

namespace gattn::cpu {

namespace prune_detail {

template <class T>
double dot(const T* a, const T* b, std::int64_t d) {
  double s = 0;
  for (std::int64_t x = 0; x < d; ++x) s += static_cast<double>(a[x]) * static_cast<double>(b[x]);
  return s;
}

}  // namespace prune_detail

// The plan [B·H, query tiles, key tiles] of causal attention params `p` (FlashAttentionParams<T>) at
// threshold θ = p.prune_threshold in (0, 1): kTileVisit for the pairs the forward walks (from the
// tile of the first active row's first visible key to the diagonal tile), kTileSkip for those among
// them whose bound is below ln θ, kTileUnseen elsewhere.
template <class P>
std::vector<std::uint8_t> prune_plan(const P& p) {
  using T = std::remove_cv_t<std::remove_pointer_t<decltype(p.q)>>;
  constexpr std::int64_t tile = ops::kPruneTile;
  const std::int64_t BH = p.B * p.H, Tn = p.Tq, d = p.d;
  const std::int64_t n_qt = (Tn + tile - 1) / tile, n_kt = (p.Tk + tile - 1) / tile;
  std::vector<std::uint8_t> plan(static_cast<std::size_t>(BH * n_qt * n_kt), ops::kTileUnseen);
  // The scale in double from d (not the kernel's p.scale, rounded to T): the CUDA plan computes the
  // same, so both devices decide alike.
  const double log_theta = std::log(p.prune_threshold), scale = 1.0 / std::sqrt(static_cast<double>(d));
#pragma omp parallel if (worth_parallel(BH * Tn * d))
  {
    // Per head: scale·‖q_i‖ and −(s_ii + c_i) per query, Kmax and Cmax per key tile.
    std::vector<double> qn(static_cast<std::size_t>(Tn)), off(static_cast<std::size_t>(Tn));
    std::vector<double> kmax(static_cast<std::size_t>(n_kt)), cmax(static_cast<std::size_t>(n_kt));
#pragma omp for schedule(static)
    for (std::int64_t bh = 0; bh < BH; ++bh) {
      const T* q = p.q + bh * Tn * d;
      const T* k = p.k + bh / (p.H / p.H_kv) * p.Tk * d;
      const T* c = p.col_bias ? p.col_bias + bh * p.Tk : nullptr;
      const std::int32_t* active = p.active ? p.active + (bh / p.H) * Tn : nullptr;
      std::fill(kmax.begin(), kmax.end(), 0.0);
      std::fill(cmax.begin(), cmax.end(), -std::numeric_limits<double>::infinity());
      for (std::int64_t j = 0; j < p.Tk; ++j) {
        const std::size_t kt = static_cast<std::size_t>(j / tile);
        kmax[kt] = std::max(kmax[kt], std::sqrt(prune_detail::dot(k + j * d, k + j * d, d)));
        cmax[kt] = std::max(cmax[kt], c ? static_cast<double>(c[j]) : 0.0);
      }
      for (std::int64_t i = 0; i < Tn; ++i) {
        qn[static_cast<std::size_t>(i)] = scale * std::sqrt(prune_detail::dot(q + i * d, q + i * d, d));
        off[static_cast<std::size_t>(i)] =
            -(scale * prune_detail::dot(q + i * d, k + i * d, d) + (c ? static_cast<double>(c[i]) : 0.0));
      }
      for (std::int64_t qt = 0; qt < n_qt; ++qt) {
        const std::int64_t i0 = qt * tile, i1 = std::min(Tn, i0 + tile);
        std::int64_t first = -1, last = -1;
        for (std::int64_t i = i0; i < i1; ++i)
          if (!active || active[i] != 0) {
            if (first < 0) first = i;
            last = i;
          }
        if (first < 0) continue;  // no active row: the forward does not walk this query tile
        const std::int64_t first_key = p.window > 0 ? std::max<std::int64_t>(0, first - p.window + 1) : 0;
        std::uint8_t* row = plan.data() + (bh * n_qt + qt) * n_kt;
        for (std::int64_t kt = first_key / tile; kt <= last / tile; ++kt) {
          row[kt] = ops::kTileVisit;
          if (kt == qt) continue;  // the diagonal tile holds every row's own key: never skipped
          double bound = -std::numeric_limits<double>::infinity();
          for (std::int64_t i = first; i <= last; ++i)
            if (!active || active[i] != 0)
              bound = std::max(bound, qn[static_cast<std::size_t>(i)] * kmax[static_cast<std::size_t>(kt)] +
                                          cmax[static_cast<std::size_t>(kt)] + off[static_cast<std::size_t>(i)]);
          if (bound < log_theta) row[kt] = ops::kTileSkip;
        }
      }
    }
  }
  return plan;
}

// The pairs a plan skips and walks: counts[0] += skipped, counts[1] += walked.
inline void count_plan(const std::vector<std::uint8_t>& plan, std::int64_t* counts) {
  for (std::uint8_t s : plan) {
    counts[0] += s == ops::kTileSkip;
    counts[1] += s == ops::kTileVisit;
  }
}

}  // namespace gattn::cpu
