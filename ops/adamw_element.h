// AdamW's update of one element, written once for both devices: the CPU kernel (ops/cpu/adamw.h)
// and the CUDA kernel (ops/cuda/adamw.cu) call the same function, so an option that changes the
// update is one change here. Every operation rounds once: on the GPU through the __*_rn
// intrinsics (never contracted into FMAs), on the CPU because the file that instantiates it
// (ops/adamw.cpp) is built with -ffp-contract=off; the two devices agree bit for bit.
#pragma once
#include <cmath>

#if defined(__CUDACC__)
#define GATTN_ADAMW_HD __host__ __device__
#else
#define GATTN_ADAMW_HD
#endif

namespace gattn::adamw {

// What one step uses for every parameter (from the optimizer's options).
struct Settings {
  double beta1, beta2, eps;
};

// What one parameter uses this step, from its group's lr and weight decay and its own step count t
// (computed in double by the optimizer).
struct ParamCoeffs {
  double decay;         // 1 − lr·wd
  double step_size;     // lr / (1 − β1ᵗ)
  double inv_sqrt_bc2;  // 1 / √(1 − β2ᵗ)
};

// Settings and ParamCoeffs rounded to the compute type T, as the kernels take them.
template <class T>
struct Hyper {
  T beta1, beta2, one_minus_beta1, one_minus_beta2, eps;
};
template <class T>
struct Coeffs {
  T decay, step_size, inv_sqrt_bc2;
};

template <class T>
Hyper<T> hyper_as(const Settings& s) {
  return {static_cast<T>(s.beta1), static_cast<T>(s.beta2), static_cast<T>(1.0 - s.beta1),
          static_cast<T>(1.0 - s.beta2), static_cast<T>(s.eps)};
}
template <class T>
Coeffs<T> coeffs_as(const ParamCoeffs& c) {
  return {static_cast<T>(c.decay), static_cast<T>(c.step_size), static_cast<T>(c.inv_sqrt_bc2)};
}

// a·b, a + b, a − b, a / b and √a, each rounded once.
#if defined(__CUDA_ARCH__)
GATTN_ADAMW_HD inline float mul(float a, float b) { return __fmul_rn(a, b); }
GATTN_ADAMW_HD inline float add(float a, float b) { return __fadd_rn(a, b); }
GATTN_ADAMW_HD inline float sub(float a, float b) { return __fsub_rn(a, b); }
GATTN_ADAMW_HD inline float div(float a, float b) { return __fdiv_rn(a, b); }
GATTN_ADAMW_HD inline float sqrt(float a) { return __fsqrt_rn(a); }
#else
template <class T>
inline T mul(T a, T b) {
  return a * b;
}
template <class T>
inline T add(T a, T b) {
  return a + b;
}
template <class T>
inline T sub(T a, T b) {
  return a - b;
}
template <class T>
inline T div(T a, T b) {
  return a / b;
}
template <class T>
inline T sqrt(T a) {
  return std::sqrt(a);
}
#endif

// One element of PyTorch's AdamW (decoupled weight decay folded into `decay`):
//   m = β1 m + (1−β1) g;  v = β2 v + (1−β2) g²;  p = p·decay − step_size · m / (√v · inv_sqrt_bc2 + eps)
template <class T>
GATTN_ADAMW_HD inline void update(T& p, T g, T& m, T& v, const Hyper<T>& h, const Coeffs<T>& c) {
  const T mi = add(mul(h.beta1, m), mul(h.one_minus_beta1, g));
  const T vi = add(mul(h.beta2, v), mul(mul(h.one_minus_beta2, g), g));
  m = mi;
  v = vi;
  const T denom = add(mul(sqrt(vi), c.inv_sqrt_bc2), h.eps);
  p = sub(mul(p, c.decay), div(mul(c.step_size, mi), denom));
}

}  // namespace gattn::adamw
