// Gated linear units (Shazeer 2020), fused (autograd-aware): y = act(gate) ⊙ up, elementwise, for
// gate and up of one shape (the two halves of a Llama/Qwen MLP's up projection), in one pass each
// way: the backward gives both inputs' gradients from one kernel,
//   dup = g ⊙ act(gate),  dgate = g ⊙ up ⊙ act'(gate).
// f32 and f64 on the CPU, f32 on CUDA. The element math is ops/glu_element.h (both devices).
#pragma once
#include "core/tensor/tensor.h"
#include "ops/glu_element.h"

namespace gattn::ops {

// act(gate) ⊙ up for the given activation; swiglu and glu_sigmoid are its two cases.
Tensor glu(const Tensor& gate, const Tensor& up, glu::Activation act);

// SwiGLU: silu(gate) ⊙ up with silu(a) = a·σ(a); silu'(a) = σ(a)(1 + a(1 − σ(a))).
inline Tensor swiglu(const Tensor& gate, const Tensor& up) { return glu(gate, up, glu::Activation::silu); }

// The sigmoid GLU: σ(gate) ⊙ up; σ'(a) = σ(a)(1 − σ(a)).
inline Tensor glu_sigmoid(const Tensor& gate, const Tensor& up) { return glu(gate, up, glu::Activation::sigmoid); }

}  // namespace gattn::ops
