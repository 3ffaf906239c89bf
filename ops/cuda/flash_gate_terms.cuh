// Per-element gate math of the flash-attention kernels, as ops/cpu/flash_attention.h computes it:
// visibility (causal + window), the pair gate's logistic noise from the same Philox word per
// (b·h, i, j), σ, and the pair modulation M = α·σ(u) + 1 − α. The logit terms themselves
// (scale·s + key_bias_j + fc_i − fc_j) are two adds in the kernels: key-side terms are pre-combined
// per key tile in shared memory, row-side ones kept in registers.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "framework/tensor/philox.h"
#include "ops/cuda/flash_attention.h"

namespace gattn::cuda::flash {

// Query i sees key j; i < T is part of it (rows past the ragged edge see nothing), j < T follows.
__device__ __forceinline__ bool visible(long long i, long long j, long long T, long long window) {
  return i < T && j <= i && (window == 0 || i - j < window);
}

__device__ __forceinline__ float sigmoidf_stable(float z) {
  if (z >= 0.0f) return 1.0f / (1.0f + expf(-z));
  const float e = expf(z);
  return e / (1.0f + e);
}

// Logistic noise of pair (bh, i, j): word offset + (bh·T + i)·T + j of the generator's stream,
// u = (top 24 bits + ½)/2²⁴ in (0, 1), n = ln u − ln(1 − u), in double as on the CPU (u needs 25
// bits) and rounded to f32 once. Not inlined: Philox and the double logs would otherwise hold
// registers of the hot loop in every launch, noise or not.
static __device__ __noinline__ float logistic_noise(std::uint64_t seed, std::uint64_t stream, std::uint64_t word) {
  const Philox4 r = philox_block(seed, stream, word / 4);
  const double u = (static_cast<double>(r.v[word % 4] >> 8) + 0.5) * (1.0 / 16777216.0);
  return static_cast<float>(log(u) - log1p(-u));
}

// The pair gate at (i, j): G = σ(u), u = (a_i + c_j + n_ij)/τ, and M = α·G + 1 − α.
struct PairGate {
  float u, G, M;
};
__device__ __forceinline__ PairGate pair_gate(const FlashParams& p, float a_i, float c_j, long long bh, long long i,
                                              long long j) {
  float z = a_i + c_j;
  if (p.noise) z += logistic_noise(p.noise_seed, p.noise_stream, p.noise_offset + static_cast<std::uint64_t>((bh * p.T + i) * p.T + j));
  PairGate g;
  g.u = z * p.inv_tau;
  g.G = sigmoidf_stable(g.u);
  g.M = p.alpha * g.G + (1.0f - p.alpha);
  return g;
}

}  // namespace gattn::cuda::flash
