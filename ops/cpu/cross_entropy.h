// CPU kernels for the fused cross-entropy over rows of V logits with one i32 target per row: the
// forward needs only each row's log-sum-exp, and the backward rebuilds softmax from it in place.
// Pure functions over raw buffers (float or double): no Tensor, no autograd, no allocation.
#pragma once
#include <cmath>
#include <cstdint>

#include "ops/cpu/fast_math.h"
#include "ops/cpu/parallel.h"
#include "ops/cpu/softmax.h"

namespace gattn::cpu {

// Position of the first target outside [0, V) that is not ignore_index, or −1 when all are usable.
inline std::int64_t cross_entropy_first_bad_target(const std::int32_t* t, std::int64_t rows, std::int64_t V,
                                                   std::int32_t ignore_index) {
  for (std::int64_t r = 0; r < rows; ++r)
    if (t[r] != ignore_index && (t[r] < 0 || t[r] >= V)) return r;
  return -1;
}

// Per row: lse[r] = log Σ_j exp(x_rj) (max-subtracted) and row_loss[r] = lse[r] − x_r,t[r], the
// negative log-probability of the target; row_loss is 0 on ignored rows (their lse is still set).
// Targets must already be checked.
template <class T>
void cross_entropy_forward(const T* logits, const std::int32_t* t, T* lse, T* row_loss, std::int64_t rows,
                           std::int64_t V, std::int32_t ignore_index) {
#pragma omp parallel for schedule(static) if (worth_parallel(rows * V * 4))
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* xr = logits + r * V;
    const T l = row_logsumexp(xr, V);
    lse[r] = l;
    row_loss[r] = t[r] == ignore_index ? T(0) : l - xr[t[r]];
  }
}

// The mean over non-ignored rows, summed in row order in double so the loss does not depend on the
// thread count and keeps precision over many rows. *count receives the number of non-ignored rows;
// the mean is 0 when there are none.
template <class T>
double cross_entropy_mean(const T* row_loss, const std::int32_t* t, std::int64_t rows, std::int32_t ignore_index,
                          std::int64_t* count) {
  double s = 0;
  std::int64_t n = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    if (t[r] == ignore_index) continue;
    s += static_cast<double>(row_loss[r]);
    ++n;
  }
  *count = n;
  return n ? s / static_cast<double>(n) : 0.0;
}

// d loss / d x_rj = (softmax(x_r)_j − [j = t_r]) · scale with scale = g / count, where
// softmax(x_r)_j = exp(x_rj − lse_r) comes from the saved log-sum-exp; ignored rows get 0.
template <class T>
void cross_entropy_backward(const T* logits, const std::int32_t* t, const T* lse, T scale, T* dlogits,
                            std::int64_t rows, std::int64_t V, std::int32_t ignore_index) {
#pragma omp parallel for schedule(static) if (worth_parallel(rows * V * 4))
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* xr = logits + r * V;
    T* dr = dlogits + r * V;
    if (t[r] == ignore_index) {
      for (std::int64_t j = 0; j < V; ++j) dr[j] = T(0);
      continue;
    }
    const T l = lse[r];
#pragma omp simd
    for (std::int64_t j = 0; j < V; ++j) dr[j] = vexp(xr[j] - l) * scale;
    dr[t[r]] -= scale;
  }
}

}  // namespace gattn::cpu
