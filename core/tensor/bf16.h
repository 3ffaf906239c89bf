// bfloat16 as a storage type: conversions with round-to-nearest-even, usable on host and device.
#pragma once
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define GATTN_HD __host__ __device__
#else
#define GATTN_HD
#endif

namespace gattn {

struct bf16 {
  std::uint16_t bits = 0;
};

GATTN_HD inline bf16 float_to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  bf16 out;
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) {  // NaN stays a (quiet) NaN
    out.bits = static_cast<std::uint16_t>((u >> 16) | 0x40u);
    return out;
  }
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even
  out.bits = static_cast<std::uint16_t>(u >> 16);
  return out;
}

GATTN_HD inline float bf16_to_float(bf16 h) {
  std::uint32_t u = static_cast<std::uint32_t>(h.bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace gattn
