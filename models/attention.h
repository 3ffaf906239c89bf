// The gated causal self-attention of one block (prefix `attn.`): qkv projection, the fused
// attention op with this layer's gates, the output projection. Each gate kind lives in one file in
// models/gates/ behind the Gate interface (models/gating/gate.h); nothing here names a kind.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/tensor/random.h"
#include "framework/nn/layers.h"
#include "framework/nn/module.h"
#include "models/config.h"
#include "models/kv_cache.h"
#include "ops/attention/attention.h"

namespace gattn::models {

// Statistics of one layer for one forward: attention entropy, sink ratio, gate moments.
struct LayerStats {
  ops::AttentionStats attention;
  ops::GateMoments gate;  // all gate values of this layer, every gate pooled (empty without gates)
  // The gate values of each head [H], pooled over the layer's gates that have one value set per head
  // (score, forget, output, context) and the pair gate (its fused op returns them per head); empty
  // when no gate of the layer reports per head. A head without a gate has empty moments.
  std::vector<ops::GateMoments> gate_by_head;
  // Massive activations (Sun et al. 2024; Qiu et al. 2025's second measure beside the first-token
  // share): max |x| over the residual stream after the block, every sequence, position and channel.
  double act_max = 0;
  double attn_entropy() const;  // mean over heads and queries
  double sink_ratio() const;    // mean over heads and queries i ≥ 1 of A_i0
  // With adaptive computation pruning: the share of the forward's (query tile, key tile) pairs
  // skipped; null without pruning (no pair counted).
  std::optional<double> pruned_tile_frac() const;
};

// What one layer shows when a forward is inspected (`gattn report`): its gate values and the final
// attention weights. A gate value is what the statistics count (docs/gates.md says what each kind
// reports); a layer with several gates pools them.
struct LayerInspection {
  std::vector<double> gate_values;    // every gate value of the layer, all sequences of the batch
  std::vector<double> gate_by_token;  // [T]: the first sequence's gate value at each position (the
                                      // mean of the gates that report one); empty without gates
  int gate_by_token_sources = 0;      // gates averaged into gate_by_token
  // [B, T]: every sequence's gate value at each query position, as gate_by_token for the first (its
  // first T values); what the statistics by token class read. Gates that report along the keys of a
  // cross-attention (the source's positions) leave it out.
  std::vector<double> gate_by_position;
  int gate_by_position_sources = 0;  // gates averaged into gate_by_position
  std::vector<double> attention;     // [H, T, keys]: the first sequence's final attention weights A_ij
  std::int64_t heads = 0, tokens = 0;
  std::int64_t keys = 0;  // the keys of a row: T for self-attention, the source length for cross
};

// The named regularisers a forward can compute. Layers add a differentiable sum and a count; the
// model reports Σ sum / Σ count, or Σ sum where nothing was counted (a per-layer loss that adds up).
struct RegularizerSum {
  Tensor sum;  // [] (undefined = 0)
  double count = 0;
};
inline constexpr const char* kGateEntropy = "gate_entropy";  // mean binary entropy of the gate values
inline constexpr const char* kAttnEntropy = "attn_entropy";  // mean entropy of the attention rows
inline constexpr const char* kGateL1 = "gate_l1";            // mean of the (soft) gate values

// What a forward pass asks of each attention layer, and where the layer reports back.
struct AttentionContext {
  bool training = false;
  Generator* noise = nullptr;  // gumbel_sigmoid noise and gate dropout while training
  // Optimizer steps done: where the scheduled gate options (temperature, ramp) stand.
  std::int64_t step = 0;
  bool collect_stats = false;
  LayerStats* stats = nullptr;                         // this layer's stats (when collect_stats)
  std::set<std::string> wanted;                        // the regularisers asked for, by name
  std::map<std::string, RegularizerSum> regularizers;  // what the layers computed of them
  LayerInspection* inspect = nullptr;                  // this layer's inspection (eval-mode forwards only)
  // The decoder block's cross-attention's (encoder–decoder): Block swaps them in for its sublayer.
  LayerStats* cross_stats = nullptr;
  LayerInspection* cross_inspect = nullptr;
  // True while a cross-attention's key gates report (CrossMemory prepare): their values run along
  // the source, not the query positions that LayerInspection::gate_by_position is indexed by.
  bool reporting_keys = false;
  // Encoder–decoder: [B, H, S] added to the logits of source keys, a large negative value on the
  // source's padding (kSeq2SeqPad) so no query attends to it, 0 elsewhere; undefined when the batch
  // has no padding (or in a decoder's self-attention). The encoder's self-attention and the
  // cross-attention add it to their column bias.
  Tensor key_padding;

  bool wants(const std::string& name) const { return wanted.count(name) != 0; }
  // Adds `term` (and `count` values it sums over) to the regulariser `name`.
  void add_regularizer(const std::string& name, const Tensor& term, double count);
};

// q, k, v per head [B, H, T, d]; h is the block's normalised input [B, T, C] (what the gates read:
// an input gate changes what q, k, v are projected from, not h). In cross-attention k and v come
// from `memory`, the encoder output [B, S, C] (undefined in self-attention): a gate on the keys reads
// it in place of h.
struct AttentionInputs {
  Tensor h, q, k, v;
  Tensor memory = Tensor();
  // What a gate of the keys reads: the memory in cross-attention, h otherwise.
  const Tensor& key_source() const { return memory.defined() ? memory : h; }
};

// [B, H, T, d] -> [B, T, H·d], and back.
Tensor merge_heads(const Tensor& y);
Tensor split_heads(const Tensor& x, std::int64_t n_head);

class Gate;

// Where block `layer`'s gate of kind `kind` keeps its parameters, as GatedAttention registers them:
// "blocks.<layer>.attn.gate." for the block's only gate, "blocks.<layer>.attn.gate.<kind>." beside
// others, "blocks.<layer>.attn.<module>." for a kind with its own module name (the router). The
// encoder's gates live under "encoder.blocks.<layer>.attn.", the cross-attention's under
// "blocks.<layer>.cross.".
std::string gate_parameter_prefix(const ModelConfig& config, std::int64_t layer, const std::string& kind,
                                  const std::string& site = kSiteSelf);

// The GPT-2 start of a residual projection (attn.proj, mlp.proj, cross.proj): 0.02/√(2L) with L the
// blocks of the stack it is in (the encoder's for site encoder), so the residual stream's variance
// does not grow with depth.
double residual_init_std(const ModelConfig& config, const std::string& site);

// An attention module with gates: builds and registers the gates of block `layer` at `site`
// (attn.gate., attn.gate.<kind>. beside others, a kind's own module name such as attn.router.).
class GateHost : public nn::Module {
 public:
  std::vector<std::shared_ptr<Gate>> gates;  // in the order of application; empty for the baseline

 protected:
  void add_gates(const ModelConfig& config, std::int64_t layer, const std::string& site, Generator& init);
};

// The attention of one block with its gates (none, one or several, each of another kind), applied
// in the fixed order of models/gating/gate.h: input → q, k, v → logit terms → softmax → modulation →
// expert mixture → per-head output → merged output → attn.proj.
class GatedAttention : public GateHost {
 public:
  // `site` kSiteEncoder: the encoder's bidirectional self-attention (no causal mask, the encoder's
  // gates, the source padding of AttentionContext::key_padding masked); kSiteSelf: causal.
  GatedAttention(const ModelConfig& config, std::int64_t layer, Generator& init, const std::string& site = kSiteSelf);
  // h [B, T, C] -> [B, T, C]
  Tensor forward(const Tensor& h, AttentionContext& ctx);
  // The gates and the attention between the projections: h, q, k, v -> the heads-merged output
  // [B, T, C] that attn.proj takes (what `gattn bench attention` times). q and k are unrotated; with
  // rope the attention rotates them by the positions 0 … T−1.
  Tensor attend(const AttentionInputs& in, AttentionContext& ctx);
  // Generation: h [B, n, C] of n new positions; writes them to rows at.row … of `cache` and
  // attends over the rows held (eval-mode math at optimizer step at.step, which fixes the scheduled
  // gate options; no autograd), with the top-k keys and head skipping of at.options. With rope the
  // attention's q and k are rotated by their absolute positions at.position …, and the cache keeps
  // the rotated k.
  Tensor forward_cached(const Tensor& h, LayerKVCache& cache, const CachedStep& at);
  std::shared_ptr<nn::Linear> qkv, proj;
  std::shared_ptr<nn::Norm> q_norm, k_norm;  // model.qk_norm rmsnorm only

 private:
  // x [B, T, C] -> h with q [B, H, T, d] and k, v [B, H_kv, T, d] (attn.qkv on x, split into heads,
  // q and k through the qk norm when the model has one).
  AttentionInputs project(const Tensor& h, const Tensor& x) const;
  // Generation with --skip-heads-below: i32 [B, H, n], 1 where the block's whole-head gates are
  // below the threshold (counted in `counters`); undefined when no gate of the block gates heads.
  Tensor skipped_rows(const AttentionInputs& in, const AttentionContext& ctx, const InferenceOptions& options,
                      InferenceCounters* counters) const;
  // With rope: `in` with q and k rotated by the absolute positions first_position …
  // first_position+T−1, what the attention itself takes; `in` unchanged otherwise. The gates read
  // q and k unrotated (pair's row and column terms, the context gate's q), so nothing but the
  // attention scores sees a position and those see only differences of positions.
  AttentionInputs rotated(const AttentionInputs& in, std::int64_t first_position) const;
  std::int64_t n_head_, n_kv_head_, head_dim_;
  bool rope_;
  double rope_theta_, rope_fraction_;
  bool causal_;
};

}  // namespace gattn::models
