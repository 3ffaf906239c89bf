// A slow, obviously-correct gated attention built only from the primitive autograd ops: it
// materialises the [B, H, T, T] scores and weights, so tests can check ops::flash_attention (its
// outputs, statistics and every gradient) against it. Never used by training.
#pragma once
#include "framework/tensor/tensor.h"
#include "ops/attention.h"

namespace gattn::test {

// Same contract as ops::flash_attention (ops/attention.h): out, row_entropy when
// options.entropy_output, gate_entropy when options.pair_gate_entropy, and options.stats filled the
// same way. With gate.pair_noise set it draws the same logistic noise as the fused op (same Philox
// words, same advance of the generator), so noisy runs can be compared too.
ops::AttentionResult reference_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                         const ops::AttentionGateTerms& gate = {},
                                         const ops::AttentionOptions& options = {});

// i32 [T, T] with 1 where key j is hidden from query i: j > i, or i − j ≥ window when window > 0.
Tensor attention_hidden_mask(std::int64_t T, std::int64_t window);

}  // namespace gattn::test
