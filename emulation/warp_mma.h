// The bf16 tensor-core instruction of the flash kernels, mma.sync.aligned.m16n8k16.row.col.f32.
// bf16.bf16.f32, emulated for a warp: every lane publishes its A and B fragments, each rebuilds the
// 16×16 A and 16×8 B from the documented fragment layouts (ops/attention/cuda/flash_layout.h, pinned to the
// PTX tables by a unit test) and computes its own four accumulator entries. Accumulation is in f32
// in k order; the hardware's internal order and rounding differ, which the GPU tests' tolerances
// cover.
#pragma once
#include <bit>
#include <cstdint>
#include <cstring>

#include "core/tensor/bf16.h"
#include "emulation/grid.h"
#include "ops/attention/cuda/flash_layout.h"

namespace gattn::emu {

inline std::uint32_t pack_bf16x2(float lo, float hi) {
  return static_cast<std::uint32_t>(float_to_bf16(lo).bits) |
         (static_cast<std::uint32_t>(float_to_bf16(hi).bits) << 16);
}

inline float bf16_half(std::uint32_t word, int half) {
  const std::uint32_t bits = (word >> (16 * half)) & 0xffffu;
  return std::bit_cast<float>(bits << 16);
}

inline void mma_m16n8k16_bf16(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2]) {
  using namespace gattn::cuda::mma;
  struct Fragments {
    std::uint32_t a[4], b[2];
  } mine{{a[0], a[1], a[2], a[3]}, {b[0], b[1]}};
  const unsigned char* table = warp_publish(&mine, sizeof mine);
  float A[16][16], B[16][8];
  for (int l = 0; l < kWarpSize; ++l) {
    Fragments f;
    std::memcpy(&f, table + static_cast<std::size_t>(l) * kWarpSlotBytes, sizeof f);
    for (int r = 0; r < 4; ++r)
      for (int h = 0; h < 2; ++h) A[a_row(l, r)][a_col(l, r, h)] = bf16_half(f.a[r], h);
    for (int r = 0; r < 2; ++r)
      for (int h = 0; h < 2; ++h) B[b_k(l, r, h)][b_n(l)] = bf16_half(f.b[r], h);
  }
  warp_release();
  const int lane = current_thread().lane;
  for (int v = 0; v < 4; ++v) {
    float s = d[v];
    for (int k = 0; k < 16; ++k) s += A[c_row(lane, v)][k] * B[k][c_col(lane, v)];
    d[v] = s;
  }
}

}  // namespace gattn::emu
