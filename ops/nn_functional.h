// The fused neural-network ops (autograd-aware). Each backward is written next to its forward in
// the matching .cpp with the math in a comment.
#pragma once
#include "core/tensor/random.h"
#include "core/tensor/tensor.h"

namespace gattn::ops {

// Softmax and log-softmax over the last axis, max-subtracted.
// Backward: softmax dx = y ⊙ (g − Σ g⊙y); log_softmax dx = g − softmax(x) Σ g.
Tensor softmax(const Tensor& x);
Tensor log_softmax(const Tensor& x);

// LayerNorm over the last axis: y = (x − μ)/√(σ² + eps) ⊙ w + b; w, b: [C]. Saves μ and 1/σ per row.
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps = 1e-5);

// RMSNorm over the last axis: y = (x / √(mean(x²) + eps)) ⊙ s, with s = w, or 1 + w when `offset`
// (the zero-centred weight of Qwen3-Next); weight [C] may be undefined (s = 1, no parameter).
// Hugging Face's LlamaRMSNorm order of operations in f32. Saves 1/rms per row; the backward gives
// dx and dweight in one pass over the rows (dweight summed in a fixed order).
Tensor rms_norm(const Tensor& x, const Tensor& weight, double eps = 1e-6, bool offset = false);

// Rows of weight [V, C] picked by i32 indices of any shape: [..., C]. An index outside [0, V) is a
// ValueError naming it. Backward scatters g into a [V, C] gradient (deterministic order).
Tensor embedding(const Tensor& weight, const Tensor& indices);

// Mean cross-entropy of logits [..., V] against i32 targets [...], skipping targets equal to
// ignore_index; computed from the row log-sum-exp (no probabilities materialised in forward).
// Backward: (softmax(logits) − onehot(target)) · g / count, zero on ignored rows.
// All targets ignored gives loss 0. A target outside [0, V) other than ignore_index is a ValueError.
Tensor cross_entropy(const Tensor& logits, const Tensor& targets, std::int32_t ignore_index = -1);

// Writes `value` where `mask` (i32, broadcastable to x) is nonzero, keeps x elsewhere.
// Backward: g with the masked positions zeroed.
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);

// Inverted dropout: keeps each element with probability 1−p and scales it by 1/(1−p). The mask
// comes from gen (Philox), so a seed gives the same mask on CPU and GPU. Identity when !training or
// p == 0. p must be in [0, 1).
Tensor dropout(const Tensor& x, double p, Generator& gen, bool training = true);

}  // namespace gattn::ops
