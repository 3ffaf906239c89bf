// The pruning plan on the device (the bound: ops/attention/prune_plan.h), the twin of
// ops/attention/cpu/flash_prune.h: three small passes, O(T·d) and O(T²/64) work per head against
// the attention's O(T²·d), all in double from the stored q, k and column term so that the plan is
// the CPU's. Launched by flash_attention_forward and again, from the same inputs, by
// flash_attention_backward (through flash_prune_plan, flash_prune.cu), whose kernels skip the pairs
// it marks.
//  1. flash_prune_rows_kernel: per row i of each query head, scale·‖q_i‖, −(s_ii + c_i) and ‖k_i‖.
//  2. flash_prune_keys_kernel: per 64-key tile J, Kmax_J and Cmax_J.
//  3. flash_prune_plan_kernel: per (query tile, key tile), the plan entry.
#pragma once
#include <cmath>
#include <cstdint>

#include "ops/attention/cuda/flash_attention.h"
#include "ops/attention/cuda/flash_mma.cuh"
#include "ops/attention/cuda/flash_terms.cuh"
#include "ops/attention/prune_plan.h"

namespace gattn::cuda::flash {

constexpr int kPruneThreads = 128;

template <class In>
__global__ void flash_prune_rows_kernel(FlashParams p, double* qn, double* off, double* kn) {
  const long long rows = p.B * p.H * p.Tq;
  const long long r = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const long long bh = r / p.Tq, i = r % p.Tq;  // causal: Tq = Tk, key i exists
  const In* q = static_cast<const In*>(p.q) + r * p.d;
  const In* k = static_cast<const In*>(p.k) + (bh / (p.H / p.H_kv) * p.Tk + i) * p.d;
  double qq = 0, kk = 0, qk = 0;
  for (long long x = 0; x < p.d; ++x) {
    const double a = Io<In>::load1(q + x), b = Io<In>::load1(k + x);
    qq += a * a;
    kk += b * b;
    qk += a * b;
  }
  const double scale = 1.0 / sqrt(static_cast<double>(p.d));
  const double c = p.col_bias ? static_cast<double>(p.col_bias[bh * p.Tk + i]) : 0.0;
  qn[r] = scale * sqrt(qq);
  off[r] = -(scale * qk + c);
  kn[r] = sqrt(kk);
}

__global__ void flash_prune_keys_kernel(FlashParams p, const double* kn, double* kmax, double* cmax) {
  constexpr long long tile = ops::kPruneTile;
  const long long n_kt = (p.Tk + tile - 1) / tile;
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= p.B * p.H * n_kt) return;
  const long long bh = t / n_kt, j0 = t % n_kt * tile, j1 = j0 + tile < p.Tk ? j0 + tile : p.Tk;
  double km = 0, cm = -INFINITY;
  for (long long j = j0; j < j1; ++j) {
    km = fmax(km, kn[bh * p.Tk + j]);
    cm = fmax(cm, p.col_bias ? static_cast<double>(p.col_bias[bh * p.Tk + j]) : 0.0);
  }
  kmax[t] = km;
  cmax[t] = cm;
}

__global__ void flash_prune_plan_kernel(FlashParams p, const double* qn, const double* off, const double* kmax,
                                        const double* cmax, std::uint8_t* plan) {
  constexpr long long tile = ops::kPruneTile;
  const long long n_qt = (p.Tq + tile - 1) / tile, n_kt = (p.Tk + tile - 1) / tile;
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= p.B * p.H * n_qt * n_kt) return;
  const long long bh = t / (n_qt * n_kt), qt = t / n_kt % n_qt, kt = t % n_kt;
  const long long i0 = qt * tile, i1 = i0 + tile < p.Tq ? i0 + tile : p.Tq;
  long long first = -1, last = -1;
  for (long long i = i0; i < i1; ++i)
    if (row_active(p, bh, i)) {
      if (first < 0) first = i;
      last = i;
    }
  std::uint8_t state = ops::kTileUnseen;
  const long long first_key = p.window > 0 && first - p.window + 1 > 0 ? first - p.window + 1 : 0;
  if (first >= 0 && kt >= first_key / tile && kt <= last / tile) {
    state = ops::kTileVisit;
    if (kt != qt) {  // the diagonal tile is never skipped
      const double km = kmax[bh * n_kt + kt], cm = cmax[bh * n_kt + kt];
      double bound = -INFINITY;
      for (long long i = first; i <= last; ++i)
        if (row_active(p, bh, i)) bound = fmax(bound, qn[bh * p.Tq + i] * km + cm + off[bh * p.Tq + i]);
      if (bound < log(p.prune_threshold)) state = ops::kTileSkip;
    }
  }
  plan[t] = state;
}

}  // namespace gattn::cuda::flash
