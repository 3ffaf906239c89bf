// The fused attention's tile products (64×d×64 and the like, one thread each inside the kernel's
// own parallel region): f32 through a register-blocked kernel of our own, everything else through
// blas_gemm. At these sizes a library GEMM spends much of its time around the arithmetic: OpenBLAS
// packs both operands on every call, scales C in a pass of its own and walks its driver, and on a
// first-generation Zen core (AVX2) its 64×64×64 product ran at ~19 GFLOP/s, half the core's FMA
// peak; the kernel in tile_gemm.cpp reads A and B where they lie (only a transposed B is packed)
// and keeps a block of C in registers over the whole inner sum: ~36 GFLOP/s on the same product
// (docs/benchmarks.md, "Attention's tile products").
#pragma once
#include <type_traits>

#include "ops/cpu/gemm.h"

namespace gattn::cpu {

// The register-blocked f32 product; falls back to blas_gemm where N is not a multiple of the
// vector width (tile_gemm_lanes()) or a size is 0.
void tile_gemm_f32(const GemmArgs<float>& g);

// How many f32 lanes the kernel's vectors hold on this build (16 with AVX-512, 8 with AVX, else 4).
int tile_gemm_lanes();

// One tile product, GemmArgs semantics (beta == 0 overwrites C without reading it).
template <class T>
void tile_gemm(const GemmArgs<T>& g) {
  if constexpr (std::is_same_v<T, float>)
    tile_gemm_f32(g);
  else
    blas_gemm<T>(g);
}

}  // namespace gattn::cpu
