// The CUDA kernel language for the emulation build (GATTN_CUDA_EMULATE): CMake force-includes this
// header into every .cu file (core/cuda/, ops/cuda/), which is then compiled by the host C++
// compiler. It makes the execution-space keywords plain C++, `__shared__` per-block storage (the
// fibers of a block share their OS thread, and blocks run one at a time), the built-in indices the
// running fiber's own, and provides the intrinsics the kernels use: barriers, warp shuffles,
// atomics, explicitly rounded arithmetic. The bf16 tensor-core product is emulation/warp_mma.h,
// which ops/attention/cuda/flash_mma.cuh includes.
#pragma once

// Before the CUDA headers: host_defines.h keeps a definition it finds.
#define __global__
#define __device__
#define __host__
#define __shared__ static thread_local
#define __constant__ static
#define __launch_bounds__(...)

#include <cuda_runtime.h>

#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "emulation/grid.h"

#ifndef __noinline__
#define __noinline__
#endif

#define threadIdx (::gattn::emu::current_thread().thread_idx)
#define blockIdx (::gattn::emu::current_thread().block_idx)
#define blockDim (::gattn::emu::current_thread().block_dim)
#define gridDim (::gattn::emu::current_thread().grid_dim)
#define warpSize 32

// ---- barriers ----
inline void __syncthreads() { ::gattn::emu::block_barrier(); }
inline int __syncthreads_or(int p) { return ::gattn::emu::block_barrier_or(p); }
inline int __syncthreads_and(int p) { return ::gattn::emu::block_barrier_and(p); }
inline int __syncthreads_count(int p) { return ::gattn::emu::block_barrier_count(p); }
inline void __syncwarp(unsigned = 0xffffffffu) {
  ::gattn::emu::warp_publish(nullptr, 0);
  ::gattn::emu::warp_release();
}

// ---- warp shuffles (every live lane of the warp takes part, as the kernels' full masks say) ----
namespace gattn::emu {
template <class T>
T shuffle_from(T v, int src_lane) {
  static_assert(sizeof(T) <= kWarpSlotBytes && std::is_trivially_copyable_v<T>);
  const unsigned char* table = warp_publish(&v, sizeof(T));
  T out;
  std::memcpy(&out, table + static_cast<std::size_t>(src_lane & (kWarpSize - 1)) * kWarpSlotBytes, sizeof(T));
  warp_release();
  return out;
}
}  // namespace gattn::emu

template <class T>
T __shfl_xor_sync(unsigned, T v, int lane_mask, int width = 32) {
  const int lane = ::gattn::emu::current_thread().lane;
  const int src = lane ^ lane_mask;
  // Beyond the segment of `width` lanes a lane reads its own value (the PTX rule).
  return ::gattn::emu::shuffle_from(v, (src / width == lane / width) ? src : lane);
}
template <class T>
T __shfl_sync(unsigned, T v, int src_lane, int width = 32) {
  const int lane = ::gattn::emu::current_thread().lane;
  return ::gattn::emu::shuffle_from(v, (lane / width) * width + (src_lane % width));
}
template <class T>
T __shfl_down_sync(unsigned, T v, unsigned delta, int width = 32) {
  const int lane = ::gattn::emu::current_thread().lane;
  const int src = lane + static_cast<int>(delta);
  return ::gattn::emu::shuffle_from(v, (src / width == lane / width) ? src : lane);
}

// ---- atomics (blocks run on one OS thread at a time, but the library may run several) ----
template <class T>
T atomicAdd(T* p, T v) {
  return std::atomic_ref<T>(*p).fetch_add(v);
}
template <class T>
T atomicMin(T* p, T v) {
  std::atomic_ref<T> a(*p);
  T old = a.load();
  while (v < old && !a.compare_exchange_weak(old, v)) {
  }
  return old;
}
template <class T>
T atomicMax(T* p, T v) {
  std::atomic_ref<T> a(*p);
  T old = a.load();
  while (v > old && !a.compare_exchange_weak(old, v)) {
  }
  return old;
}

// ---- explicitly rounded arithmetic: never contracted (the emulated sources build with
// -ffp-contract=off), so each is one IEEE round-to-nearest operation as on the GPU ----
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fsqrt_rn(float a) { return std::sqrt(a); }

// ---- bit casts ----
inline float __int_as_float(int i) { return std::bit_cast<float>(i); }
inline float __uint_as_float(unsigned u) { return std::bit_cast<float>(u); }
inline int __float_as_int(float f) { return std::bit_cast<int>(f); }
inline unsigned __float_as_uint(float f) { return std::bit_cast<unsigned>(f); }

// The runtime's templated form, which cuda_runtime.h offers only to nvcc.
template <class... P>
inline cudaError_t cudaFuncSetAttribute(void (*kernel)(P...), cudaFuncAttribute attr, int value) {
  return cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), attr, value);
}
