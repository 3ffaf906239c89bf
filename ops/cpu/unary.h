// CPU kernels for the elementwise functions of ops/unary.h: one pass over raw buffers per forward
// and per backward, threaded above a work threshold. Each function is a small struct with a forward
// `f(x)` and a backward `df(g, s)`, where `s` is the saved value the backward needs (the input or
// the output, as the struct's `kSavesOutput` says), so one forward and one backward loop serve all.
#pragma once
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "ops/cpu/fast_math.h"
#include "ops/cpu/parallel.h"

namespace gattn::cpu {

// exp: y = eˣ, dy/dx = y.
struct ExpFn {
  static constexpr bool kSavesOutput = true;
  static constexpr std::int64_t kCost = 8;  // rough cost per element relative to an add
  template <class T>
  static T f(T x) {
    return vexp(x);
  }
  template <class T>
  static T df(T g, T y) {
    return g * y;
  }
};

// log: y = ln x, dy/dx = 1/x. Non-positive inputs give -inf/NaN as IEEE says, never UB.
struct LogFn {
  static constexpr bool kSavesOutput = false;
  static constexpr std::int64_t kCost = 8;
  template <class T>
  static T f(T x) {
    return std::log(x);
  }
  template <class T>
  static T df(T g, T x) {
    return g / x;
  }
};

// tanh: dy/dx = 1 − y².
struct TanhFn {
  static constexpr bool kSavesOutput = true;
  static constexpr std::int64_t kCost = 16;
  template <class T>
  static T f(T x) {
    return std::tanh(x);
  }
  template <class T>
  static T df(T g, T y) {
    return g * (T(1) - y * y);
  }
};

// σ(x) = 1/(1+e⁻ˣ), computed from e = e^{−|x|} ∈ (0, 1] so nothing overflows: σ = 1/(1+e) for
// x ≥ 0 and e/(1+e) for x < 0. dσ/dx = σ(1−σ).
struct SigmoidFn {
  static constexpr bool kSavesOutput = true;
  static constexpr std::int64_t kCost = 10;
  template <class T>
  static T f(T x) {
    const T e = vexp(-std::abs(x));
    const T r = T(1) / (T(1) + e);
    return x >= T(0) ? r : e * r;
  }
  template <class T>
  static T df(T g, T y) {
    return g * y * (T(1) - y);
  }
};

// log σ(x) = min(x, 0) − log1p(e^{−|x|}): exact for both tails (≈ x for x ≪ 0, ≈ −e⁻ˣ for
// x ≫ 0) and never takes log of 0. d/dx log σ(x) = 1 − σ(x) = σ(−x), again from e = e^{−|x|}:
// σ(−x) = e/(1+e) for x ≥ 0 and 1/(1+e) for x < 0 (no cancellation in 1 − σ).
struct LogSigmoidFn {
  static constexpr bool kSavesOutput = false;
  static constexpr std::int64_t kCost = 16;
  template <class T>
  static T f(T x) {
    if constexpr (std::is_same_v<T, float>)  // vectorises: log σ of every gate value on log steps
      return (x < 0.0f ? x : 0.0f) - log1p_unit(fast_exp(-std::abs(x)));
    else
      return std::fmin(x, T(0)) - std::log1p(std::exp(-std::abs(x)));
  }
  template <class T>
  static T df(T g, T x) {
    const T e = vexp(-std::abs(x));
    const T r = T(1) / (T(1) + e);
    return g * (x >= T(0) ? e * r : r);
  }
};

// relu: max(x, 0), written so NaN propagates (NaN < 0 is false). dy/dx = [x > 0] (0 at x = 0).
struct ReluFn {
  static constexpr bool kSavesOutput = false;
  static constexpr std::int64_t kCost = 1;
  template <class T>
  static T f(T x) {
    return x < T(0) ? T(0) : x;
  }
  template <class T>
  static T df(T g, T x) {
    return x > T(0) ? g : T(0);
  }
};

// GELU, tanh approximation (GPT-2): y = ½x(1 + t), t = tanh(u), u = c(x + a x³), c = √(2/π),
// a = 0.044715. dy/dx = ½(1 + t) + ½x(1 − t²)·du/dx with du/dx = c(1 + 3a x²).
// For |x| large t saturates to ±1, so y → x or −0 and dy/dx → 1 or 0 without overflow trouble.
struct GeluFn {
  static constexpr bool kSavesOutput = false;
  static constexpr std::int64_t kCost = 20;
  static constexpr double kC = 0.7978845608028654;  // √(2/π)
  static constexpr double kA = 0.044715;
  // t = tanh(u): the one costly part (an exp and a division), which the fused linear_gelu computes
  // once in its forward and keeps for its backward (cpu::bias_gelu_forward).
  template <class T>
  static T tanh_of(T x) {
    return vtanh(T(kC) * (x + T(kA) * x * x * x));
  }
  template <class T>
  static T f_from_tanh(T x, T t) {
    return T(0.5) * x * (T(1) + t);
  }
  template <class T>
  static T df_from_tanh(T g, T x, T t) {
    const T du = T(kC) * (T(1) + T(3 * kA) * x * x);
    return g * (T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * du);
  }
  template <class T>
  static T f(T x) {
    return f_from_tanh(x, tanh_of(x));
  }
  template <class T>
  static T df(T g, T x) {
    return df_from_tanh(g, x, tanh_of(x));
  }
};

// square: y = x², dy/dx = 2x.
struct SquareFn {
  static constexpr bool kSavesOutput = false;
  static constexpr std::int64_t kCost = 1;
  template <class T>
  static T f(T x) {
    return x * x;
  }
  template <class T>
  static T df(T g, T x) {
    return T(2) * g * x;
  }
};

// sqrt: dy/dx = 1/(2y) (inf at 0, as the true derivative; NaN for negative inputs).
struct SqrtFn {
  static constexpr bool kSavesOutput = true;
  static constexpr std::int64_t kCost = 4;
  template <class T>
  static T f(T x) {
    return std::sqrt(x);
  }
  template <class T>
  static T df(T g, T y) {
    return g / (T(2) * y);
  }
};

// heaviside: y = 1[x > 0] (NaN stays NaN), dy/dx = 0 (a threshold; a straight-through estimator adds the gradient
// of the soft function it stands for).
struct HeavisideFn {
  static constexpr bool kSavesOutput = false;
  static constexpr std::int64_t kCost = 1;
  template <class T>
  static T f(T x) {
    return x > T(0) ? T(1) : (x <= T(0) ? T(0) : x);  // NaN stays NaN
  }
  template <class T>
  static T df(T, T) {
    return T(0);
  }
};

// y[i] = Fn::f(x[i]) for i < n. x and y may be the same buffer.
template <class Fn, class T>
void unary_forward(const T* x, T* y, std::int64_t n) {
#pragma omp parallel for schedule(static) if (worth_parallel(n * Fn::kCost))
  for (std::int64_t i = 0; i < n; ++i) y[i] = Fn::f(x[i]);
}

// dx[i] = Fn::df(g[i], saved[i]) for i < n; saved is x or y per Fn::kSavesOutput.
template <class Fn, class T>
void unary_backward(const T* g, const T* saved, T* dx, std::int64_t n) {
#pragma omp parallel for schedule(static) if (worth_parallel(n * Fn::kCost))
  for (std::int64_t i = 0; i < n; ++i) dx[i] = Fn::df(g[i], saved[i]);
}

}  // namespace gattn::cpu
