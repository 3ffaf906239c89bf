// Device helpers of the flash-attention kernels: the bf16 tensor-core product (inline PTX
// mma.sync m16n8k16, sm_80+), fragment loads from shared memory with the layouts of
// flash_layout.h, bf16 packing, and the staging of a tile of rows from global memory (bf16 or f32,
// rounded to bf16 on the way) into shared memory. Only nvcc-compiled sources include this.
//
// Shared tiles hold raw bf16 bits (std::uint16_t) in rows of `D + kPad` elements: the pad moves
// consecutive rows 4 banks apart, so the fragment loads (8 rows × 4 words per warp) hit 32
// distinct banks.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "core/tensor/error.h"
#include "ops/attention/cuda/flash_attention.h"
#include "ops/attention/cuda/flash_layout.h"

// GATTN_CUDA_EMULATE: the emulation build compiles the kernels as host C++; emulation/kernel_model.h
// provides the warp primitives (__shfl_xor_sync, __syncthreads, threadIdx …) and warp_mma.h the
// tensor-core product (included here, by its only user, since it needs the fragment layout above).
#if defined(GATTN_CUDA_EMULATE)
#include "emulation/warp_mma.h"
#define GATTN_FLASH_DYNAMIC_SMEM(name) uint4* name = reinterpret_cast<uint4*>(::gattn::emu::dynamic_shared_memory())
#define GATTN_FLASH_SHARED __shared__
#else
#include <cuda_bf16.h>
#define GATTN_FLASH_DYNAMIC_SMEM(name) extern __shared__ uint4 name[]
#define GATTN_FLASH_SHARED __shared__
#endif

namespace gattn::cuda::flash {

constexpr int kPad = 8;  // bf16 elements of padding per shared row (16 bytes, keeps rows 16-byte aligned)
constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;

__device__ __forceinline__ std::uint32_t pack_bf16x2(float lo, float hi) {
#if defined(GATTN_CUDA_EMULATE)
  return ::gattn::emu::pack_bf16x2(lo, hi);
#else
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);  // .x (low half) = lo
  return *reinterpret_cast<const std::uint32_t*>(&v);
#endif
}

__device__ __forceinline__ float bf16_bits_to_float(std::uint16_t b) {
  return __uint_as_float(static_cast<std::uint32_t>(b) << 16);
}

// d += a·b for one 16×8 tile: a 16×16 (row), b 16×8 (col), bf16 in, f32 accumulate.
__device__ __forceinline__ void mma_bf16(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2]) {
#if defined(GATTN_CUDA_EMULATE)
  ::gattn::emu::mma_m16n8k16_bf16(d, a, b);
#else
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

__device__ __forceinline__ std::uint32_t lds32(const std::uint16_t* s) {
  return *reinterpret_cast<const std::uint32_t*>(s);
}

// A fragment of the 16×16 block at (row0, col0) of a row-major shared tile.
__device__ __forceinline__ void load_a(const std::uint16_t* s, int stride, int row0, int col0, int lane,
                                       std::uint32_t (&a)[4]) {
#pragma unroll
  for (int r = 0; r < 4; ++r) a[r] = lds32(s + (row0 + mma::a_row(lane, r)) * stride + col0 + mma::a_col(lane, r, 0));
}

// B fragment (k0…k0+15, n0…n0+7) of an operand stored transposed, rows = n: element (k, n) is
// s[n][k] (K in Q·Kᵀ). The two k of a register are neighbours in a row: one 32-bit load.
__device__ __forceinline__ void load_b_nk(const std::uint16_t* s, int stride, int n0, int k0, int lane,
                                          std::uint32_t (&b)[2]) {
#pragma unroll
  for (int r = 0; r < 2; ++r) b[r] = lds32(s + (n0 + mma::b_n(lane)) * stride + k0 + mma::b_k(lane, r, 0));
}

// B fragment of an operand stored rows = k: element (k, n) is s[k][n] (V in P·V). The two k of a
// register sit in two rows: two 16-bit loads.
__device__ __forceinline__ void load_b_kn(const std::uint16_t* s, int stride, int k0, int n0, int lane,
                                          std::uint32_t (&b)[2]) {
  const int n = n0 + mma::b_n(lane);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const std::uint32_t lo = s[(k0 + mma::b_k(lane, r, 0)) * stride + n];
    const std::uint32_t hi = s[(k0 + mma::b_k(lane, r, 1)) * stride + n];
    b[r] = lo | (hi << 16);
  }
}

// The A fragment of k-step kk of a product whose left operand is a 16×N tile held as C fragments
// c[N/8][4] (P, dS): two neighbouring n-tiles, rounded to bf16 (flash_layout.h, a_from_c_*).
template <int NT>
__device__ __forceinline__ void a_from_c(const float (&c)[NT][4], int kk, std::uint32_t (&a)[4]) {
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int t = mma::a_from_c_tile(kk, r);
    a[r] = pack_bf16x2(c[t][mma::a_from_c_value(r, 0)], c[t][mma::a_from_c_value(r, 1)]);
  }
}

// Global element types: bf16 (raw bits) or f32, rounded to bf16 when staged.
template <class In>
struct Io;
template <>
struct Io<std::uint16_t> {
  // 8 consecutive elements as 8 bf16 (16 bytes).
  static __device__ __forceinline__ uint4 load8(const std::uint16_t* g) { return *reinterpret_cast<const uint4*>(g); }
  static __device__ __forceinline__ float load1(const std::uint16_t* g) { return bf16_bits_to_float(*g); }
  static __device__ __forceinline__ void store2(std::uint16_t* g, float lo, float hi) {
    *reinterpret_cast<std::uint32_t*>(g) = pack_bf16x2(lo, hi);
  }
};
template <>
struct Io<float> {
  static __device__ __forceinline__ uint4 load8(const float* g) {
    const float4 x = reinterpret_cast<const float4*>(g)[0], y = reinterpret_cast<const float4*>(g)[1];
    return make_uint4(pack_bf16x2(x.x, x.y), pack_bf16x2(x.z, x.w), pack_bf16x2(y.x, y.y), pack_bf16x2(y.z, y.w));
  }
  static __device__ __forceinline__ float load1(const float* g) { return *g; }
  static __device__ __forceinline__ void store2(float* g, float lo, float hi) {
    *reinterpret_cast<float2*>(g) = make_float2(lo, hi);
  }
};

// Copies rows [row0, row0 + ROWS) of a [*, D] global matrix into a shared tile, as bf16; rows at or
// past `n_rows` become zeros (the ragged edge of T), so products over them add exact zeros, and so
// do rows whose `keep` flag is 0 (keep null: every row kept; they are not read, so whatever they
// hold, NaN included, cannot reach a product). All threads of the block take part; the caller
// synchronises.
template <int ROWS, int D, class In>
__device__ __forceinline__ void stage_rows(std::uint16_t* s, const In* g, long long row0, long long n_rows,
                                           const std::int32_t* keep = nullptr) {
  constexpr int kChunks = D / 8;  // 16-byte chunks of a shared row
  constexpr int kStride = D + kPad;
  for (int c = threadIdx.x; c < ROWS * kChunks; c += kThreads) {
    const int r = c / kChunks, col = (c % kChunks) * 8;
    uint4 v = make_uint4(0, 0, 0, 0);
    if (row0 + r < n_rows && (keep == nullptr || keep[row0 + r] != 0)) v = Io<In>::load8(g + (row0 + r) * D + col);
    *reinterpret_cast<uint4*>(s + r * kStride + col) = v;
  }
}

// Sum over the four lanes of a quad (the lanes that share a row of a C fragment), same order on
// every lane.
__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  x += __shfl_xor_sync(0xffffffffu, x, 2);
  return x;
}
__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
  return x;
}

// Host: the grid is (Tq or Tk blocks, B·H or B·H_kv); refuses what does not fit the grid's y
// dimension, and a head grouping the kernels cannot index.
inline void check_grid(const FlashParams& p, const char* op) {
  if (p.H_kv <= 0 || p.H % p.H_kv != 0)
    throw ValueError(std::string(op) + ": H_kv = " + std::to_string(p.H_kv) +
                     " key/value heads must divide H = " + std::to_string(p.H));
  if (p.B * p.H > 65535)
    throw ValueError(std::string(op) + ": B*H = " + std::to_string(p.B * p.H) + " exceeds 65535 heads per launch");
  if (p.Tq <= 0 || p.Tk <= 0) throw ValueError(std::string(op) + ": empty sequence");
  if (p.causal && p.Tq != p.Tk)
    throw ValueError(std::string(op) + ": a causal mask needs Tq = Tk, got " + std::to_string(p.Tq) + " and " +
                     std::to_string(p.Tk));
}

}  // namespace gattn::cuda::flash
