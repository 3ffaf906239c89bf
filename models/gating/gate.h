// The interface every gate kind implements: one hook per place a gate can act in a block's
// attention. GatedAttention (models/attention.cpp) calls the hooks of the block's gates in this fixed
// order, so gates compose without knowing of each other:
//   1. gate_input      on h, before attn.qkv                         (the tensor q, k, v come from)
//   1b. gate_qk        on q and k per head, before the logits        (a multiplicative score gate)
//   2. add_terms       additive logit terms and the modulation of the fused op (row/column biases,
//                      the pairwise modulation after softmax); several gates' terms add up
//   3. attend          an expert mixture that replaces the one attention call (at most one per block)
//   4. gate_heads      on the per-head output y [B, H, T, d]
//   5. gate_output     on the heads-merged output [B, T, C], before attn.proj
//   6. merge_state     cross-attention only: the decoder state after the sublayer (s + c by default)
// Generation with a KV cache runs the same hooks in eval mode, with add_cached_terms and
// attend_cached in place of 2 and 3.
#pragma once
#include <cstdint>
#include <memory>

#include "framework/nn/module.h"
#include "models/attention.h"
#include "models/config.h"
#include "models/kv_cache.h"
#include "ops/attention/attention.h"
#include "ops/attention/cached_attention.h"

namespace gattn::models {

class Gate : public nn::Module {
 public:
  // 1. The tensor q, k, v are projected from (h itself by default).
  virtual Tensor gate_input(const AttentionInputs& in, const Tensor& x, AttentionContext& ctx);
  // 1b. Rescales q and/or k of `in` in place (in.q, in.k [B, H, T, d]; unchanged by default).
  virtual void gate_qk(AttentionInputs& in, AttentionContext& ctx);
  // 2. Adds this gate's terms to the fused op's (q, k, v of `in` are final).
  virtual void add_terms(const AttentionInputs& in, ops::AttentionTerms& terms, AttentionContext& ctx);
  // 2'. Generation: `in` holds the new positions pos … pos+n−1 (their k, v already in the cache);
  // appends this gate's per-key terms to `cache` and adds its terms for the new queries to `terms`.
  // `ctx` is the eval-mode context of the generation (its step fixes the scheduled options).
  virtual void add_cached_terms(const AttentionInputs& in, LayerKVCache& cache, std::int64_t pos,
                                ops::CachedAttentionInputs& terms, const AttentionContext& ctx);
  // 3. Whether this gate replaces the attention call by a mixture of attentions (attend below).
  virtual bool mixes_attention() const { return false; }
  // The mixture's output [B, H, T, d] given the block's terms; reports the attention statistics.
  virtual Tensor attend(const AttentionInputs& in, const ops::AttentionTerms& terms, AttentionContext& ctx);
  // `ctx` is the generation's eval-mode context, as for add_cached_terms.
  virtual Tensor attend_cached(const AttentionInputs& in, const LayerKVCache& cache, std::int64_t pos,
                               const ops::CachedAttentionInputs& terms, const AttentionContext& ctx);
  // Inference shortcuts (models/kv_policy.h): whether the gate adds a per-key term that ranks keys
  // for every later query (a column bias, or the pair modulation's column term) …
  virtual bool ranks_keys() const { return false; }
  // The θ of adaptive computation pruning the block's causal attention call takes from this gate
  // (AttentionOptions::prune_threshold; 0 = none). A gate whose terms make far keys provably
  // negligible (forget's decay) may ask for it.
  virtual double prune_threshold() const { return 0.0; }
  // … and whether it scales each head's whole output by one value, head_gate [B, H, n] of the new
  // positions (1 on heads it leaves alone; undefined when it does not gate whole heads).
  virtual bool gates_whole_heads() const { return false; }
  virtual Tensor head_gate(const AttentionInputs& in, const AttentionContext& ctx) const;
  // 4. The per-head output y [B, H, T, d] (unchanged by default).
  virtual Tensor gate_heads(const AttentionInputs& in, const Tensor& y, AttentionContext& ctx);
  // 5. The merged output y [B, T, C] (unchanged by default).
  virtual Tensor gate_output(const AttentionInputs& in, const Tensor& y, AttentionContext& ctx);
  // 6. Cross-attention: whether this gate decides the decoder state after the sublayer, and the new
  // state from the state s [B, T, C] and the sublayer's output c (after cross.proj), s + c by default.
  virtual bool merges_state() const { return false; }
  virtual Tensor merge_state(const AttentionInputs& in, const Tensor& s, const Tensor& c, AttentionContext& ctx);
};

// The fused attention of the block: ops::flash_attention on in.q, in.k, in.v with `terms`, asking
// for what the context wants and reporting it: attention statistics (and the modulation's values as
// gate values) into ctx.stats, the attention-entropy and (for a modulation) gate-entropy
// regularisers, the inspected attention weights. `options.window` and `options.active_queries` pass
// through. Returns the op's result; the mixture gates call it once per expert with
// `report_rows = false` and report the mixture themselves.
ops::AttentionResult run_attention(const AttentionInputs& in, const ops::AttentionTerms& terms, AttentionContext& ctx,
                                   ops::AttentionOptions options = {}, bool report_rows = true);

// ops::cached_attention of the new queries in.q (positions pos … pos+n−1) over the layer cache, with
// the per-key and per-query terms already in `terms` (q, k, v and length are filled in here).
Tensor run_cached_attention(const AttentionInputs& in, const LayerKVCache& cache, std::int64_t pos,
                            ops::CachedAttentionInputs terms);

}  // namespace gattn::models
