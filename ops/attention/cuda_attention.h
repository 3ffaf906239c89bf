// flash_attention on CUDA tensors (ops/attention/attention.h's contract): the fused flash-attention kernels
// (ops/attention/cuda/flash_attention.h) where they apply, the composed attention otherwise.
//
// Fused when the products run in bf16 — q is bf16, or q is f32 inside an autocast bf16 scope (read
// once, at forward time) — the head dim is 16, 32, 64 or 128, and the modulation entropy output is
// not asked for (that one runs composed; the row entropy output is fused). f32 outside autocast
// stays on the composed path, exact f32. Statistics (options.stats) come out of the fused forward.
// Skipped query rows (options.active_queries) are honoured on both paths; the fused kernels skip
// the query blocks that have no active row. Both paths take the mask without causality
// (options.causal false) and keys of their own length Tk.
// Gradients have their inputs' dtypes (the bias and modulation terms may be bf16 or f32; they run
// as f32).
#pragma once
#include "core/tensor/tensor.h"
#include "ops/attention/attention.h"

namespace gattn::ops {

AttentionResult cuda_attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionTerms& terms,
                               const AttentionOptions& options);

// Whether cuda_attention would take the fused kernels for q [B, H, Tq, d] with these options now.
bool cuda_attention_fused(const Tensor& q, const AttentionOptions& options);

}  // namespace gattn::ops
