// The tensor core's element kernels: type conversion (f32, f64, i32, bf16 in any pair), so
// Tensor::to(DType) and copy_from never stage a device tensor through the host; Tensor::fill's
// kernel; and the gradient sum of the backward engine. Mixed precision casts every GEMM operand
// with the conversion, so each is a plain grid-stride kernel, memory bound, vectorised by the compiler.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "core/cuda/device_elements.h"
#include "core/cuda/launch.cuh"
#include "core/cuda/stream.h"
#include "core/tensor/bf16.h"
#include "core/tensor/error.h"

namespace gattn::cuda {

namespace {

cudaStream_t stream() { return compute_stream().handle(); }

template <class T>
__device__ inline float to_f32(T x) {
  return static_cast<float>(x);
}
template <>
__device__ inline float to_f32<bf16>(bf16 x) {
  return bf16_to_float(x);
}

// f64 → f64 and f64 ↔ i32 keep their precision; every other pair goes through f32, which is exact
// for bf16 and what the CPU's convert<> does for f32 targets.
template <class S, class D>
__device__ inline D convert_one(S x) {
  if constexpr (std::is_same_v<D, bf16>) {
    return float_to_bf16(static_cast<float>(to_f32(x)));
  } else if constexpr (std::is_same_v<S, bf16>) {
    return static_cast<D>(bf16_to_float(x));
  } else {
    return static_cast<D>(x);
  }
}

template <class S, class D>
__global__ void convert_kernel(D* __restrict__ dst, const S* __restrict__ src, long long n) {
  GATTN_GRID_STRIDE(i, n) dst[i] = convert_one<S, D>(src[i]);
}

template <class S, class D>
void launch_convert(void* dst, const void* src, long long n) {
  launch(convert_kernel<S, D>, grid_for(n), kThreads, 0, stream(), static_cast<D*>(dst), static_cast<const S*>(src), n);
  GATTN_CUDA_LAUNCH_CHECK("convert_kernel");
}

template <class S>
void launch_from(void* dst, DType dst_type, const void* src, long long n) {
  switch (dst_type) {
    case DType::f32:
      return launch_convert<S, float>(dst, src, n);
    case DType::f64:
      return launch_convert<S, double>(dst, src, n);
    case DType::i32:
      return launch_convert<S, std::int32_t>(dst, src, n);
    case DType::bf16:
      return launch_convert<S, bf16>(dst, src, n);
  }
}

// Every element of dst set to one bit pattern (2, 4 or 8 bytes).
template <class U>
__global__ void fill_pattern_kernel(U* dst, U pattern, long long n) {
  GATTN_GRID_STRIDE(i, n) dst[i] = pattern;
}

template <class U, class V>
void launch_fill(void* dst, V value, long long n) {
  U pattern;
  static_assert(sizeof(U) == sizeof(V));
  std::memcpy(&pattern, &value, sizeof pattern);
  launch(fill_pattern_kernel<U>, grid_for(n), kThreads, 0, stream(), static_cast<U*>(dst), pattern, n);
  GATTN_CUDA_LAUNCH_CHECK("fill_pattern_kernel");
}

template <class T>
__global__ void add_kernel(T* dst, const T* a, const T* b, long long n) {
  GATTN_GRID_STRIDE(i, n) dst[i] = a[i] + b[i];
}

template <class T>
void launch_add(void* dst, const void* a, const void* b, long long n) {
  launch(add_kernel<T>, grid_for(n), kThreads, 0, stream(), static_cast<T*>(dst), static_cast<const T*>(a),
         static_cast<const T*>(b), n);
  GATTN_CUDA_LAUNCH_CHECK("add_kernel");
}

}  // namespace

void add_device_elements(void* dst, const void* a, const void* b, DType type, std::size_t n) {
  if (n == 0) return;
  const auto count = static_cast<long long>(n);
  switch (type) {
    case DType::f32:
      return launch_add<float>(dst, a, b, count);
    case DType::f64:
      return launch_add<double>(dst, a, b, count);
    case DType::i32:
    case DType::bf16:
      break;
  }
  throw DTypeError(std::string("add_device_elements: gradients are f32 or f64 on the device, got ") + dtype_name(type));
}

void fill_device_elements(void* dst, DType type, double value, std::size_t n) {
  if (n == 0) return;
  const auto count = static_cast<long long>(n);
  switch (type) {
    case DType::f32:
      return launch_fill<std::uint32_t>(dst, static_cast<float>(value), count);
    case DType::f64:
      return launch_fill<std::uint64_t>(dst, value, count);
    case DType::i32:
      return launch_fill<std::uint32_t>(dst, static_cast<std::int32_t>(value), count);
    case DType::bf16:
      return launch_fill<std::uint16_t>(dst, float_to_bf16(static_cast<float>(value)).bits, count);
  }
}

void convert_device_elements(void* dst, DType dst_type, const void* src, DType src_type, std::size_t n) {
  if (n == 0) return;
  const auto count = static_cast<long long>(n);
  switch (src_type) {
    case DType::f32:
      return launch_from<float>(dst, dst_type, src, count);
    case DType::f64:
      return launch_from<double>(dst, dst_type, src, count);
    case DType::i32:
      return launch_from<std::int32_t>(dst, dst_type, src, count);
    case DType::bf16:
      return launch_from<bf16>(dst, dst_type, src, count);
  }
}

}  // namespace gattn::cuda
