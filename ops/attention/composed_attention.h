// Attention composed from the primitive autograd ops: ops/attention/attention.h's math written term by
// term, materialising the [B, H, Tq, Tk] scores and weights. Two users:
//  - the tests, as the obviously-correct oracle that ops::flash_attention (outputs, statistics and
//    every gradient) is checked against — its gradients come from the primitives' own gradchecked
//    backwards;
//  - ops::flash_attention on CUDA tensors where the fused CUDA kernels do not apply
//    (ops/attention/cuda_attention.h: f32 outside autocast, unsupported head dims, the modulation entropy
//    output): every primitive it uses has a CUDA kernel, so attention runs on the GPU, at O(T²)
//    memory per head.
#pragma once
#include "core/tensor/tensor.h"
#include "ops/attention/attention.h"

namespace gattn::ops {

// Same contract as flash_attention: out, row_entropy when options.entropy_output,
// modulation_entropy when options.modulation_entropy, and options.stats filled the same way. With
// terms.modulation_noise set it draws the same logistic noise as the fused op (same Philox words,
// same advance of the generator), so noisy runs agree too. Skipped query rows
// (options.active_queries) are computed and then multiplied by 0: out and row_entropy rows are 0,
// no gradient flows from them, and the statistics and modulation entropy leave them out. k and v
// with fewer heads than q (grouped-query attention) are repeated here for their query heads, as
// Hugging Face's repeat_kv does: the oracle may copy. All tensors on one device (CPU or CUDA).
AttentionResult composed_attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionTerms& terms = {},
                                   const AttentionOptions& options = {});

// i32 [Tq, Tk] on `device` with 1 where key j is hidden from query i: when causal, j > i or
// i − j ≥ window when window > 0; when not causal, none.
Tensor attention_hidden_mask(std::int64_t Tq, std::int64_t Tk, std::int64_t window, bool causal,
                             Device device = Device::cpu);

}  // namespace gattn::ops
