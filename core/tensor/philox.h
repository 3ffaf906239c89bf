// Philox4x32-10 (Salmon et al., SC'11): a counter-based RNG. The same (key, counter) gives the same
// four words on CPU and GPU, so a seed produces identical random tensors on both devices.
#pragma once
#include <cmath>
#include <cstdint>

#include "core/tensor/bf16.h"  // GATTN_HD

namespace gattn {

struct Philox4 {
  std::uint32_t v[4];
};

GATTN_HD inline std::uint32_t philox_mulhilo(std::uint32_t a, std::uint32_t b, std::uint32_t* hi) {
  std::uint64_t p = static_cast<std::uint64_t>(a) * b;
  *hi = static_cast<std::uint32_t>(p >> 32);
  return static_cast<std::uint32_t>(p);
}

// counter: 128 bits as four words; key: 64 bits as two words.
GATTN_HD inline Philox4 philox4x32_10(Philox4 ctr, std::uint32_t k0, std::uint32_t k1) {
  constexpr std::uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u;
  constexpr std::uint32_t W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    std::uint32_t hi0, hi1;
    std::uint32_t lo0 = philox_mulhilo(M0, ctr.v[0], &hi0);
    std::uint32_t lo1 = philox_mulhilo(M1, ctr.v[2], &hi1);
    Philox4 next{{hi1 ^ ctr.v[1] ^ k0, lo1, hi0 ^ ctr.v[3] ^ k1, lo0}};
    ctr = next;
    k0 += W0;
    k1 += W1;
  }
  return ctr;
}

// gattn's stream layout: key = seed, counter = (block index, stream id). Element i of a draw that
// starts at stream offset `offset` comes from block (offset + i) / 4, word (offset + i) % 4 — the
// CUDA kernels index the same way.
GATTN_HD inline Philox4 philox_block(std::uint64_t seed, std::uint64_t stream, std::uint64_t block) {
  Philox4 ctr{{static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(block >> 32),
               static_cast<std::uint32_t>(stream), static_cast<std::uint32_t>(stream >> 32)}};
  return philox4x32_10(ctr, static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32));
}

// A uniform float in [0, 1) from the top 24 bits of a word (exactly representable in f32).
GATTN_HD inline float philox_uniform(std::uint32_t word) {
  return static_cast<float>(word >> 8) * (1.0f / 16777216.0f);
}

// The uniform in (0, 1) of word `word` of stream (seed, stream): (top 24 bits + ½)/2²⁴, in double
// (it takes 25 bits). The fused attention draws one per (b·h, i, j) entry for its modulation's
// noise and dropout, identically on the CPU and the GPU.
GATTN_HD inline double philox_open_uniform(std::uint64_t seed, std::uint64_t stream, std::uint64_t word) {
  const Philox4 r = philox_block(seed, stream, word / 4);
  return (static_cast<double>(r.v[word % 4] >> 8) + 0.5) * (1.0 / 16777216.0);
}

// Box-Muller on a pair of words; u1 is kept in (0, 1] so the log is finite.
GATTN_HD inline void philox_normal_pair(std::uint32_t a, std::uint32_t b, float* z0, float* z1) {
  float u1 = (static_cast<float>(a >> 8) + 1.0f) * (1.0f / 16777216.0f);
  float u2 = static_cast<float>(b >> 8) * (1.0f / 16777216.0f);
  float r = std::sqrt(-2.0f * std::log(u1));
  float theta = 6.2831853071795864769f * u2;
  *z0 = r * std::cos(theta);
  *z1 = r * std::sin(theta);
}

}  // namespace gattn
