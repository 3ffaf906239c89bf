// CPU kernels of the fused gated linear units (ops/glu.h): one pass for y = act(gate) ⊙ up and one
// for both inputs' gradients, over raw contiguous buffers of n elements (float or double). The
// element math is ops/glu_element.h, shared with the CUDA kernel.
#pragma once
#include <cstdint>

#include "ops/cpu/parallel.h"
#include "ops/glu_element.h"

namespace gattn::cpu {

template <glu::Activation A, class T>
void glu_forward(const T* gate, const T* up, T* y, std::int64_t n) {
#pragma omp parallel for schedule(static) if (worth_parallel(n * 12))
  for (std::int64_t i = 0; i < n; ++i) y[i] = glu::forward<A>(gate[i], up[i]);
}

// dgate or dup may be null when that gradient is not wanted.
template <glu::Activation A, class T>
void glu_backward(const T* gate, const T* up, const T* g, T* dgate, T* dup, std::int64_t n) {
#pragma omp parallel for schedule(static) if (worth_parallel(n * 16))
  for (std::int64_t i = 0; i < n; ++i) {
    T da, du;
    glu::backward<A>(gate[i], up[i], g[i], da, du);
    if (dgate) dgate[i] = da;
    if (dup) dup[i] = du;
  }
}

}  // namespace gattn::cpu
