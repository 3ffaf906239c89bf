// Per-element math of the flash-attention kernels, as ops/attention/cpu/flash_attention.h computes it:
// visibility (causal + window or all keys, skipped query rows), the modulation's logistic noise
// from the same Philox word per (b·h, i, j), σ, and the modulation M = α·σ(u) + 1 − α. The logit terms
// themselves (scale·s + c_j + r_i) are two adds in the kernels: the column bias is staged per key
// tile in shared memory, the row bias kept in registers.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "core/tensor/philox.h"
#include "ops/attention/cuda/flash_attention.h"

namespace gattn::cuda::flash {

// Query i sees key j; i < Tq and j < Tk are part of it (rows and keys past the ragged edges of
// their tiles take no part).
__device__ __forceinline__ bool visible(const FlashParams& p, long long i, long long j) {
  if (i >= p.Tq || j >= p.Tk) return false;
  return !p.causal || (j <= i && (p.window == 0 || i - j < p.window));
}

// Keys [first, end) that some query of rows [i0, i0 + rows) can see.
__device__ __forceinline__ long long first_visible_key(const FlashParams& p, long long i0) {
  return p.causal && p.window > 0 && i0 - p.window + 1 > 0 ? i0 - p.window + 1 : 0;
}
__device__ __forceinline__ long long end_visible_key(const FlashParams& p, long long i0, int rows) {
  if (!p.causal) return p.Tk;
  return i0 + rows < p.Tq ? i0 + rows : p.Tq;
}

// Whether query row i (< T) of head bh is computed: p.active null means every row.
__device__ __forceinline__ bool row_active(const FlashParams& p, long long bh, long long i) {
  return p.active == nullptr || p.active[(bh / p.H) * p.Tq + i] != 0;
}

// Whether any of rows [i0, i0 + rows) of head bh is active: the same answer on every thread of the
// block. Always a block barrier (also without p.active), so every thread must call it, and callers
// may count on it as one.
__device__ __forceinline__ bool block_has_active_row(const FlashParams& p, long long bh, long long i0, int rows) {
  int any = p.active == nullptr;
  for (int t = threadIdx.x; !any && t < rows; t += blockDim.x) {
    const long long i = i0 + t;
    if (i < p.Tq && row_active(p, bh, i)) any = 1;
  }
  return __syncthreads_or(any) != 0;
}

__device__ __forceinline__ float sigmoidf_stable(float z) {
  if (z >= 0.0f) return 1.0f / (1.0f + expf(-z));
  const float e = expf(z);
  return e / (1.0f + e);
}

// Logistic noise of entry (bh, i, j): word offset + (bh·Tq + i)·Tk + j of the generator's stream,
// u = (top 24 bits + ½)/2²⁴ in (0, 1), n = ln u − ln(1 − u), in double as on the CPU (u needs 25
// bits) and rounded to f32 once. Not inlined: Philox and the double logs would otherwise hold
// registers of the hot loop in every launch, noise or not.
static __device__ __noinline__ float logistic_noise(std::uint64_t seed, std::uint64_t stream, std::uint64_t word) {
  const double u = philox_open_uniform(seed, stream, word);
  return static_cast<float>(log(u) - log1p(-u));
}

// The modulation's α for query head bh (of B·H): one for every head, or the head's own.
__device__ __forceinline__ float head_alpha(const FlashParams& p, long long bh) {
  return p.alpha_by_head ? p.alpha_by_head[bh % p.H] : p.alpha;
}

// Whether modulation dropout drops entry (bh, i, j): the uniform of its own Philox word below p.
// Not inlined, as logistic_noise.
static __device__ __noinline__ bool dropout_drops(const FlashParams& p, long long bh, long long i, long long j) {
  const std::uint64_t word = p.dropout_offset + static_cast<std::uint64_t>((bh * p.Tq + i) * p.Tk + j);
  return philox_open_uniform(p.dropout_seed, p.dropout_stream, word) < static_cast<double>(p.dropout);
}

__device__ __forceinline__ float softplusf_stable(float z) { return z > 0.0f ? z + log1pf(expf(-z)) : log1pf(expf(z)); }

// The modulation at (i, j): the soft G = act(u) (σ, or softplus), u = (a_i + b_j + n_ij)/τ, its
// derivative dG = dG/du, the applied gate Gv (G; 1[G > θ] when hard; 1 where dropout drops the
// entry), M = α·Gv + 1 − α, and `kept` (0 where dropped: no gradient through M there). Gradients
// through u use the soft G (straight-through).
struct Modulation {
  float u, G, dG, Gv, M, kept;
};
__device__ __forceinline__ Modulation modulation(const FlashParams& p, float a_i, float b_j, long long bh, long long i,
                                                 long long j) {
  float z = a_i + b_j;
  if (p.noise)
    z += logistic_noise(p.noise_seed, p.noise_stream,
                        p.noise_offset + static_cast<std::uint64_t>((bh * p.Tq + i) * p.Tk + j));
  Modulation g;
  g.u = z * p.inv_tau;
  if (p.softplus) {
    g.G = softplusf_stable(g.u);
    g.dG = sigmoidf_stable(g.u);
  } else {
    g.G = sigmoidf_stable(g.u);
    g.dG = g.G * (1.0f - g.G);
  }
  g.Gv = p.hard ? (g.G > p.hard_threshold ? 1.0f : 0.0f) : g.G;
  g.kept = 1.0f;
  if (p.dropout > 0.0f && dropout_drops(p, bh, i, j)) {
    g.Gv = 1.0f;
    g.kept = 0.0f;
  }
  const float alpha = head_alpha(p, bh);
  g.M = alpha * g.Gv + (1.0f - alpha);
  return g;
}

// dL/du of one entry: (α·dM (kept entries only) + dL/dΣG)·dG/du / τ.
__device__ __forceinline__ float modulation_du(const FlashParams& p, const Modulation& g, long long bh, float dM,
                                               float d_sum) {
  return (head_alpha(p, bh) * dM * g.kept + d_sum) * g.dG * p.inv_tau;
}

}  // namespace gattn::cuda::flash
