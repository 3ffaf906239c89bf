// Cached attention for generation: the newest Tq queries of a sequence attend over a key/value
// cache that holds every position so far, with the same gate terms as ops::flash_attention
// (ops/attention.h has the math). Keeps per-token generation linear in the context length.
// Inference only: no autograd (an input that requires grad is an AutogradError).
#pragma once
#include <cstdint>

#include "framework/tensor/tensor.h"

namespace gattn::ops {

struct CachedAttentionInputs {
  Tensor q;  // [B, H, Tq, d]: positions length−Tq … length−1
  Tensor k;  // [B, H, capacity, d]: rows 0 … length−1 hold positions 0 … length−1
  Tensor v;  // [B, H, capacity, d]
  std::int64_t length = 0;  // positions in the cache, the new ones included
  // Per-key gate terms, [B, H, capacity] like the cache (undefined = absent).
  Tensor key_bias;    // score: log σ(f_j)
  Tensor forget_cum;  // forget: c_j = Σ_{l ≤ j} log σ(f_l); a query at position i uses c_i
  Tensor pair_col;    // pair: c_j = k_j·wk (with pair_row)
  Tensor pair_row;    // pair: a_i = q_i·wq + b for the Tq queries, [B, H, Tq]
  double pair_alpha = 0;        // α = σ(alpha)
  double pair_temperature = 1;  // τ (eval: no noise)
  std::int64_t window = 0;      // 0: full causal; w > 0: keys i − w < j ≤ i
};

// Returns y [B, H, Tq, d]. f32 or f64 (one dtype throughout).
Tensor cached_attention(const CachedAttentionInputs& in);

}  // namespace gattn::ops
