// Cached attention for generation: the newest Tq queries of a sequence attend over a key/value
// cache that holds every position so far, with the same bias and modulation terms as
// ops::flash_attention (ops/attention/attention.h has the math). Keeps per-token generation linear in the
// number of cached positions. Inference only: no autograd (an input that requires grad is an
// AutogradError). The cache may hold fewer key/value heads than there are query heads
// (grouped-query attention, as ops::flash_attention takes it): query head h reads key/value head
// h / (H / H_kv) in place; every other input stays per query head.
#pragma once
#include <cstdint>
#include <limits>
#include <vector>

#include "core/tensor/tensor.h"

namespace gattn::ops {

struct CachedAttentionInputs {
  Tensor q;                 // [B, H, Tq, d]: positions length−Tq … length−1
  Tensor k;                 // [B, H_kv, capacity, d]: rows 0 … length−1 hold positions 0 … length−1
  Tensor v;                 // [B, H_kv, capacity, d], H_kv dividing H
  std::int64_t length = 0;  // positions in the cache, the new ones included
  // Terms (undefined = absent), per query head: per new query [B, H, Tq], per cached key [B, H, capacity].
  Tensor row_bias;                               // r_i of the Tq new queries, added to each of their logits
  Tensor col_bias;                               // c_j of every cached key, added to each logit of column j
  Tensor modulation_row;                         // a_i of the Tq new queries (with modulation_col)
  Tensor modulation_col;                         // b_j of every cached key
  double modulation_alpha = 0;                   // α
  std::vector<double> modulation_alpha_by_head;  // [H] or empty: α per query head (then the above is unused)
  double modulation_temperature = 1;             // τ (no noise: inference)
  // θ of a hard modulation (1[G > θ] in place of G); NaN = the soft modulation.
  double modulation_hard_threshold = std::numeric_limits<double>::quiet_NaN();
  bool modulation_softplus = false;  // G = softplus(u) instead of σ(u)
  std::int64_t window = 0;           // 0: full causal; w > 0: keys i − w < j ≤ i

  // Generation under a KV budget (models/kv_policy.h), where cache rows are no longer positions:
  // i32 [B, H, capacity], the token position each row holds (rows stay in position order, the new
  // queries' own rows last). Undefined: row j holds position j. Only the window reads positions.
  Tensor key_positions;
  // > 0: each query row attends only to its top_k_keys highest-scoring visible keys (the logits
  // with their biases; ties at the k-th score are kept too); 0: all visible keys.
  std::int64_t top_k_keys = 0;
  // i32 [B, H, Tq]: 1 = skip this query row of this head (its output is 0, nothing is computed).
  Tensor skip_rows;
  // [B, H, capacity] of q's dtype: when defined, every computed row adds its final weights A_ij to
  // row j (the accumulated attention of H2O eviction).
  Tensor key_attention;
};

// Returns y [B, H, Tq, d]. f32 or f64 (one dtype throughout). ShapeError naming the shapes for k and
// v of different shapes or H_kv not dividing H.
Tensor cached_attention(const CachedAttentionInputs& in);

}  // namespace gattn::ops
