// CPU kernels of the fused gated linear units (ops/glu.h): one pass for y = act(gate) ⊙ up and one
// for both inputs' gradients, over raw contiguous buffers of n elements (float or double). The
// element math is ops/glu_element.h, shared with the CUDA kernel; σ is ops/cpu/unary.h's (a
// polynomial eˣ for float, so the loops vectorise, where std::exp kept them scalar), which makes the
// sigmoid GLU bitwise the composed σ(gate) ⊙ up, both ways.
#pragma once
#include <cstdint>

#include "ops/cpu/parallel.h"
#include "ops/cpu/unary.h"
#include "ops/glu_element.h"

namespace gattn::cpu {

template <glu::Activation A, class T>
void glu_forward(const T* gate, const T* up, T* y, std::int64_t n) {
#pragma omp parallel for simd schedule(static) if (worth_parallel(n * 12))
  for (std::int64_t i = 0; i < n; ++i) {
    const T a = gate[i];
    y[i] = glu::forward_from_sigmoid<A>(a, SigmoidFn::f(a), up[i]);
  }
}

// The backward's loop for an element function Grad::at(x, up, g, i, da, du): dgate or dup may be null
// when that gradient is not wanted, and the loops are written out per case so each vectorises
// without a test per element. Grad is a struct with a static function, not a capturing lambda: GCC
// does not vectorise loads through a lambda's captured pointers.
template <class Grad, class T>
void glu_backward_loops(const T* x, const T* up, const T* g, T* dgate, T* dup, std::int64_t n, bool threaded) {
  if (dgate && dup) {
#pragma omp parallel for simd schedule(static) if (threaded)
    for (std::int64_t i = 0; i < n; ++i) Grad::at(x, up, g, i, dgate[i], dup[i]);
  } else if (dgate) {
#pragma omp parallel for simd schedule(static) if (threaded)
    for (std::int64_t i = 0; i < n; ++i) {
      T du;
      Grad::at(x, up, g, i, dgate[i], du);
    }
  } else if (dup) {
#pragma omp parallel for simd schedule(static) if (threaded)
    for (std::int64_t i = 0; i < n; ++i) {
      T da;
      Grad::at(x, up, g, i, da, dup[i]);
    }
  }
}

// The gradients at element i from the gate itself (σ recomputed).
template <glu::Activation A>
struct GluGradFromGate {
  template <class T>
  static void at(const T* gate, const T* up, const T* g, std::int64_t i, T& da, T& du) {
    const T a = gate[i];
    glu::backward_from_sigmoid<A>(a, SigmoidFn::f(a), up[i], g[i], da, du);
  }
};

// The sigmoid GLU's gradients at element i from the saved s = σ(gate) (the sigmoid case of
// backward_from_sigmoid does not read a; s stands in for it).
struct GluSigmoidGradFromSaved {
  template <class T>
  static void at(const T* s, const T* up, const T* g, std::int64_t i, T& da, T& du) {
    glu::backward_from_sigmoid<glu::Activation::sigmoid>(s[i], s[i], up[i], g[i], da, du);
  }
};

template <glu::Activation A, class T>
void glu_backward(const T* gate, const T* up, const T* g, T* dgate, T* dup, std::int64_t n) {
  glu_backward_loops<GluGradFromGate<A>>(gate, up, g, dgate, dup, n, worth_parallel(n * 16));
}

// The sigmoid GLU keeping σ(gate) for its backward (ops/glu.cpp): y = σ(gate) ⊙ up and s = σ(gate)
// in one pass; the backward then needs no exp, and s takes the place of gate as the saved tensor
// (σ's gradients need only s), so it costs no memory either.
template <class T>
void glu_sigmoid_forward_saving(const T* gate, const T* up, T* y, T* s, std::int64_t n) {
#pragma omp parallel for simd schedule(static) if (worth_parallel(n * 12))
  for (std::int64_t i = 0; i < n; ++i) {
    const T a = gate[i], si = SigmoidFn::f(a);
    s[i] = si;
    y[i] = glu::forward_from_sigmoid<glu::Activation::sigmoid>(a, si, up[i]);
  }
}

template <class T>
void glu_sigmoid_backward_from_saved(const T* s, const T* up, const T* g, T* dgate, T* dup, std::int64_t n) {
  glu_backward_loops<GluSigmoidGradFromSaved>(s, up, g, dgate, dup, n, worth_parallel(n * 4));
}

}  // namespace gattn::cpu
