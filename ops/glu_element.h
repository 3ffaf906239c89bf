// One element of the gated linear units (ops/glu.h), written once for both devices: the CPU loop
// (ops/cpu/glu.h) and the CUDA kernel (ops/cuda/glu.cu) call these, so a new activation is one
// case here and the two kernels cannot drift apart.
#pragma once
#include <cmath>

#if defined(__CUDACC__)
#define GATTN_GLU_HD __host__ __device__
#else
#define GATTN_GLU_HD
#endif

namespace gattn::glu {

// The activation applied to the gate: silu(a) = a·σ(a) (SwiGLU) or σ(a) (the sigmoid GLU).
enum class Activation { silu, sigmoid };

// eˣ in T's precision on either device (device code has no std::exp of its own).
template <class T>
GATTN_GLU_HD inline T exp_of(T x) {
#if defined(__CUDA_ARCH__)
  if constexpr (sizeof(T) == sizeof(float))
    return expf(x);
  else
    return ::exp(x);
#else
  return std::exp(x);
#endif
}

// σ(a) from e = e^{−|a|} ∈ (0, 1], so nothing overflows: 1/(1+e) for a ≥ 0, e/(1+e) below.
template <class T>
GATTN_GLU_HD inline T sigmoid(T a) {
  const T e = exp_of(a >= T(0) ? -a : a);
  const T r = T(1) / (T(1) + e);
  return a >= T(0) ? r : e * r;
}

// y = act(a) · u, from s = σ(a): the CPU kernel passes its vectorising σ (ops/cpu/unary.h's, so the
// sigmoid GLU's σ is bitwise ops::sigmoid's), the CUDA kernel the one above.
template <Activation A, class T>
GATTN_GLU_HD inline T forward_from_sigmoid(T a, T s, T u) {
  if constexpr (A == Activation::silu)
    return a * s * u;
  else
    return s * u;
}

template <Activation A, class T>
GATTN_GLU_HD inline T forward(T a, T u) {
  return forward_from_sigmoid<A>(a, sigmoid(a), u);
}

// The gradients of y = act(a) · u for the output gradient g: du = g · act(a), da = g · u · act'(a),
// with silu'(a) = σ(a)(1 + a(1 − σ(a))) and σ'(a) = σ(a)(1 − σ(a)). The sigmoid case multiplies in
// the order the composed σ(a) ⊙ u's backward does (g·u, then ·σ(1 − σ)), so the two agree bitwise.
template <Activation A, class T>
GATTN_GLU_HD inline void backward_from_sigmoid(T a, T s, T u, T g, T& da, T& du) {
  if constexpr (A == Activation::silu) {
    du = g * a * s;
    da = g * u * s * (T(1) + a * (T(1) - s));
  } else {
    du = g * s;
    da = g * u * s * (T(1) - s);
  }
}

template <Activation A, class T>
GATTN_GLU_HD inline void backward(T a, T u, T g, T& da, T& du) {
  backward_from_sigmoid<A>(a, sigmoid(a), u, g, da, du);
}

}  // namespace gattn::glu
