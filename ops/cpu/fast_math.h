// Vectorisable exp, tanh and log1p for f32 CPU kernels. glibc's expf/tanhf/log1pf are scalar calls,
// so loops over them never vectorise; these are branch-free (Cephes' polynomials, a few ulp), which
// lets GCC emit AVX code for softmax, cross-entropy, GELU, log σ and the attention tiles. f64 keeps
// std::exp/std::tanh/std::log1p: gradchecks run in f64 and want the exact library functions.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>

namespace gattn::cpu {

// e^x for float: x = n·ln2 + r with |r| ≤ ln2/2, e^r by a degree-6 polynomial, 2^n by building the
// exponent bits. Underflows to exactly 0 below −87.3 (so exp(−inf) = 0, as masking needs), overflows
// to +inf above 88.7, and propagates NaN.
inline float fast_exp(float x) {
  constexpr float kHi = 88.7228391f, kLo = -87.3365479f;
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kC1 = 0.693359375f, kC2 = -2.12194440e-4f;  // ln 2 split for an exact n·C1
  const float xc = x > kHi ? kHi : (x < kLo ? kLo : x);
  const float n = std::floor(xc * kLog2e + 0.5f);
  const float r = xc - n * kC1 - n * kC2;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const std::int32_t bits = (static_cast<std::int32_t>(n) + 127) << 23;
  float result = p * std::bit_cast<float>(bits);
  result = x < kLo ? 0.0f : result;
  result = x > kHi ? INFINITY : result;
  return x != x ? x : result;
}

template <class T>
inline T vexp(T x) {
  return std::exp(x);
}
template <>
inline float vexp<float>(float x) {
  return fast_exp(x);
}

// tanh(x) = 1 − 2/(e^{2x} + 1): exact limits ±1 for large |x|; absolute error ~1e-7 near 0.
template <class T>
inline T vtanh(T x) {
  return std::tanh(x);
}
template <>
inline float vtanh<float>(float x) {
  return 1.0f - 2.0f / (fast_exp(2.0f * x) + 1.0f);
}

// ln(1 + t) for float t in [0, 1] (what log σ needs: t = e^{−|x|}), branch-free so loops over it
// vectorise: u = 1 + t = m·2^e with m in [√½, √2), ln m by Cephes' logf polynomial (~1 ulp), and
// Goldberg's correction t/(u − 1) for the rounding of 1 + t, so a tiny t gives t, not 0. Within
// 4 ulp of the exact value on [0, 1] (tests/unit/test_unary.cpp sweeps it).
inline float log1p_unit(float t) {
  const float u = 1.0f + t;
  const std::int32_t bits = std::bit_cast<std::int32_t>(u);
  float e = static_cast<float>(((bits >> 23) & 0xff) - 126);
  float m = std::bit_cast<float>((bits & 0x007fffff) | 0x3f000000);  // u = m·2^e, m in [0.5, 1)
  const bool low = m < 0.707106781186547524f;
  e = low ? e - 1.0f : e;
  m = low ? m + m - 1.0f : m - 1.0f;  // now u = (1 + m)·2^e with 1 + m in [√½, √2)
  const float z = m * m;
  float y = 7.0376836292e-2f;
  y = y * m - 1.1514610310e-1f;
  y = y * m + 1.1676998740e-1f;
  y = y * m - 1.2420140846e-1f;
  y = y * m + 1.4249322787e-1f;
  y = y * m - 1.6668057665e-1f;
  y = y * m + 2.0000714765e-1f;
  y = y * m - 2.4999993993e-1f;
  y = y * m + 3.3333331174e-1f;
  y = y * m * z;
  y += -2.12194440e-4f * e;
  y += -0.5f * z;
  const float ln_u = m + y + 0.693359375f * e;
  const float d = u - 1.0f;  // the t that 1 + t actually added (exact)
  return d == 0.0f ? t : ln_u * (t / d);
}

// σ(x) = 1/(1 + e^{−x}) for float: exact limits 0 and 1 (e^{−x} overflows to inf, or underflows to
// 0), relative error ~2 ulp. Only for f32 loops that must vectorise; f64 code keeps std::exp.
inline float vsigmoid(float x) { return 1.0f / (1.0f + fast_exp(-x)); }

}  // namespace gattn::cpu
