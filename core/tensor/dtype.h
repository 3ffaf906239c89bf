// Element types and devices a Tensor can have.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/tensor/bf16.h"
#include "core/tensor/error.h"

namespace gattn {

// f32 is the compute type, f64 exists for gradchecks, i32 for indices and masks,
// bf16 is a storage type for the GPU path (CPU ops convert it with to()).
enum class DType : std::uint8_t { f32, f64, i32, bf16 };

enum class Device : std::uint8_t { cpu, cuda };

inline std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32:
      return 4;
    case DType::f64:
      return 8;
    case DType::i32:
      return 4;
    case DType::bf16:
      return 2;
  }
  return 0;
}

inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "f32";
    case DType::f64:
      return "f64";
    case DType::i32:
      return "i32";
    case DType::bf16:
      return "bf16";
  }
  return "?";
}

inline const char* device_name(Device d) { return d == Device::cpu ? "cpu" : "cuda"; }

inline bool is_floating(DType t) { return t == DType::f32 || t == DType::f64 || t == DType::bf16; }

// The C++ type behind each DType, for templated kernels.
template <class T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() {
  return DType::f32;
}
template <>
constexpr DType dtype_of<double>() {
  return DType::f64;
}
template <>
constexpr DType dtype_of<std::int32_t>() {
  return DType::i32;
}
template <>
constexpr DType dtype_of<bf16>() {
  return DType::bf16;
}

// Calls fn.template operator()<T>() with T = float or double; the CPU ops compute in these two.
template <class Fn>
decltype(auto) dispatch_float(DType t, const char* op, Fn&& fn) {
  switch (t) {
    case DType::f32:
      return fn.template operator()<float>();
    case DType::f64:
      return fn.template operator()<double>();
    default:
      throw DTypeError(std::string(op) + ": expected a floating tensor (f32 or f64), got " + dtype_name(t));
  }
}

}  // namespace gattn
