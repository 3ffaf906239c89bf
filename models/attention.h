// The gated causal self-attention of one block (SPEC §4, prefix `attn.`): qkv projection, the
// fused attention op with this layer's gate, the output projection. Each gate kind lives in one
// class in models/gates/ behind the AttentionGate interface; the trainer never sees kinds, only
// LayerStats.
#pragma once
#include <memory>
#include <vector>

#include "framework/nn/layers.h"
#include "framework/nn/module.h"
#include "framework/tensor/random.h"
#include "models/config.h"
#include "models/kv_cache.h"
#include "ops/attention.h"

namespace gattn::models {

// Statistics of one layer for one forward (SPEC §4): attention entropy, sink ratio, gate moments.
struct LayerStats {
  ops::AttentionStats attention;
  ops::GateMoments gate;        // all gate values of this layer (empty for kind none)
  double attn_entropy() const;  // mean over heads and queries
  double sink_ratio() const;    // mean over heads and queries i ≥ 1 of A_i0
};

// What one layer shows when a forward is inspected (`gattn report`): its gate values and the final
// attention weights. A gate value is what SPEC §4's statistics count (for `pair` G_ij, j ≤ i; for
// `routed` the kept router weights r̃).
struct LayerInspection {
  std::vector<double> gate_values;    // every gate value of the layer, all sequences of the batch
  std::vector<double> gate_by_token;  // [T]: the first sequence's mean gate value at each position
                                      // (routed: the first expert's r̃); empty without gates
  std::vector<double> attention;      // [H, T, T]: the first sequence's final attention weights A_ij
  std::int64_t heads = 0, tokens = 0;
};

// What a forward pass asks of each attention layer, and where the layer reports back.
struct AttentionContext {
  bool training = false;
  Generator* noise = nullptr;  // gumbel_sigmoid noise while training
  bool collect_stats = false;
  LayerStats* stats = nullptr;  // this layer's stats (when collect_stats)
  bool gate_entropy = false;    // add this layer's Σ h(g) and count to the sums below
  Tensor gate_entropy_sum;      // [] running differentiable sum (undefined = 0)
  double gate_entropy_count = 0;
  bool attn_entropy = false;  // add this layer's Σ_rows H to attn_entropy_sum
  Tensor attn_entropy_sum;
  double attn_entropy_count = 0;
  bool router_balance = false;
  Tensor router_balance_sum;
  LayerInspection* inspect = nullptr;  // this layer's inspection (eval-mode forwards only)
};

// q, k, v per head [B, H, T, d]; h is the block's normalised input [B, T, C].
struct AttentionInputs {
  Tensor h, q, k, v;
};

class AttentionGate : public nn::Module {
 public:
  // Returns the attention output with heads concatenated, [B, T, C] (head n in columns n·d … n·d+d−1),
  // ready for attn.proj. merge_heads() turns [B, H, T, d] into that layout.
  virtual Tensor attend(const AttentionInputs& in, AttentionContext& ctx) = 0;

  // Generation with a KV cache: `in` holds the new positions pos … pos+n−1 only (their k and v
  // already written into cache.k, cache.v); the gate appends its per-key terms to `cache` and
  // attends over every cached position. Eval-mode math (no gumbel noise), no autograd; same
  // [B, n, C] layout as attend.
  virtual Tensor attend_cached(const AttentionInputs& in, LayerKVCache& cache, std::int64_t pos) = 0;

  // How GatedAttention registers this gate: by default the gate itself as "gate" (attn.gate.*);
  // the routed gate registers its router Linear as "router" instead (attn.router.*, SPEC §4).
  virtual const char* registered_name() const { return "gate"; }
  virtual std::shared_ptr<nn::Module> registered_module(const std::shared_ptr<AttentionGate>& self) { return self; }
};

// [B, H, T, d] -> [B, T, H·d], and back.
Tensor merge_heads(const Tensor& y);
Tensor split_heads(const Tensor& x, std::int64_t n_head);

// Makes the gate of `kind` for one layer (registered by the caller under "gate" or "router").
std::shared_ptr<AttentionGate> make_gate(const ModelConfig& config, Generator& init);

class GatedAttention : public nn::Module {
 public:
  GatedAttention(const ModelConfig& config, std::int64_t layer, Generator& init);
  // h [B, T, C] -> [B, T, C]
  Tensor forward(const Tensor& h, AttentionContext& ctx);
  // Generation: h [B, n, C] of positions pos … pos+n−1; appends them to `cache` (see attend_cached).
  Tensor forward_cached(const Tensor& h, LayerKVCache& cache, std::int64_t pos);
  std::shared_ptr<nn::Linear> qkv, proj;
  std::shared_ptr<AttentionGate> gate;  // never null: kind none is a gate that adds nothing

 private:
  // h [B, T, C] -> h with q, k, v per head [B, H, T, d] (attn.qkv, split into heads).
  AttentionInputs project(const Tensor& h) const;
  std::int64_t n_head_, head_dim_;
};

}  // namespace gattn::models
