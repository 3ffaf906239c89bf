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
// exponent bits. The limits come from the clamp alone, with no select after it (each select was
// a compare and a blend per vector, a third of the loop): below −88, n = −127 builds the bits of
// 0, so the result is exactly 0 (exp(−inf) = 0, as masking needs; between −87.7 and −87.3 it is
// subnormal); above 88.72, n = 128 builds +inf; a NaN fails both comparisons of the clamp and
// stays NaN through the arithmetic. n is rounded to nearest by adding 1.5·2²³, whose low mantissa
// bits then hold n (no round or convert instruction): this and the clamp made GCC's vectorised
// loop ~1.4× faster on a Zen 1 core, with the same results as floor(x·log₂e + ½) on [−87, 88]
// (every 0.001; they differ only where x·log₂e is within rounding of a half-integer).
inline float fast_exp(float x) {
  constexpr float kHi = 88.7228391f, kLo = -88.0f;
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kC1 = 0.693359375f, kC2 = -2.12194440e-4f;  // ln 2 split for an exact n·C1
  constexpr float kRound = 12582912.0f;                       // 1.5·2²³
  float xc = x < kLo ? kLo : x;
  xc = xc > kHi ? kHi : xc;
  const float shifted = xc * kLog2e + kRound;  // n + 1.5·2²³, n in its low mantissa bits
  const float n = shifted - kRound;
  const float r = xc - n * kC1 - n * kC2;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // (n + 127) << 23 from the bits of `shifted`: its exponent and the 2²² bit shift out.
  const std::int32_t bits = static_cast<std::int32_t>((std::bit_cast<std::uint32_t>(shifted) + 127u) << 23);
  return p * std::bit_cast<float>(bits);
}

template <class T>
inline T vexp(T x) {
  return std::exp(x);
}
template <>
inline float vexp<float>(float x) {
  return fast_exp(x);
}

// tanh(x) for float as a ratio of an odd degree-13 and an even degree-6 polynomial in x on the
// clamp [−7.9053, 7.9053], where the ratio rounds to ±1 (the fit Eigen's fast tanh uses). Relative
// error ≤ 2.8e-7 over the line (4.7 ulp just below 1; tiny x give x, where the old 1 − 2/(e^{2x} + 1)
// lost all relative precision), exact limits ±1 and NaN through. It replaced that form, whose
// exp, add and division made a chain of ~100 cycles per vector and left GELU's loop bound by
// latency (3.6 ns per element on a Zen 1 core); this one has a division and 11 multiply-adds, two
// short chains side by side (2.6 ns; docs/benchmarks.md, "Attention's tile products, and GELU's tanh
// kept").
template <class T>
inline T vtanh(T x) {
  return std::tanh(x);
}
template <>
inline float vtanh<float>(float x) {
  constexpr float kClamp = 7.90531110763549805f;
  float xc = x < -kClamp ? -kClamp : x;
  xc = xc > kClamp ? kClamp : xc;
  const float x2 = xc * xc;
  float p = -2.76076847742355e-16f;
  p = p * x2 + 2.00018790482477e-13f;
  p = p * x2 - 8.60467152213735e-11f;
  p = p * x2 + 5.12229709037114e-08f;
  p = p * x2 + 1.48572235717979e-05f;
  p = p * x2 + 6.37261928875436e-04f;
  p = p * x2 + 4.89352455891786e-03f;
  float q = 1.19825839466702e-06f;
  q = q * x2 + 1.18534705686654e-04f;
  q = q * x2 + 2.26843463243900e-03f;
  q = q * x2 + 4.89352518554385e-03f;
  return xc * p / q;
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
