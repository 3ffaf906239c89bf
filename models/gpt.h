// The GPT with a gated attention in each block (models/block.h): embeddings, the blocks, the final
// norm and the head (tied to wte or its own), the loss, the regularisers and the statistics.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/tensor/random.h"
#include "framework/nn/layers.h"
#include "framework/nn/module.h"
#include "models/attention.h"
#include "models/block.h"
#include "models/config.h"
#include "models/kv_cache.h"

namespace gattn::models {

struct ForwardOptions {
  bool collect_stats = false;  // fill ForwardResult::stats (a by-product of the forward)
  // The differentiable regularisers to compute, by name: gate_entropy (mean binary entropy of all
  // gate values), attn_entropy (mean entropy of the attention rows), and any a gate kind defines
  // (router_balance). A name the model has nothing for is left out of the result.
  std::set<std::string> regularizers;
  bool inspect = false;  // fill ForwardResult::inspection (slow: one extra pass per layer)
  // Encoder–decoder models: the source i32 [B, S] (S ≤ block_size; kSeq2SeqPad after its end), the
  // encoder's input. Required for them, an error for a decoder.
  Tensor source;
  // The generator training-time noise (gumbel_sigmoid, gate dropout) draws from; null: the model's
  // own (noise_generator()). Row-parallel training gives each part of the batch its own stream.
  Generator* noise = nullptr;
};

struct ForwardResult {
  Tensor logits;  // [B, T, V]
  Tensor loss;    // [] mean cross-entropy (defined when targets were given)
  // [] each asked-for regulariser the model computed: Σ sum / Σ count over the layers (a mean), or
  // Σ sum where the layers count nothing (a per-layer loss summed over layers).
  std::map<std::string, Tensor> regularizers;
  // One per (decoder) block when collect_stats: the self-attention's statistics and every gate value
  // of the block (its cross gates' too).
  std::vector<LayerStats> stats;
  std::vector<LayerInspection> inspection;  // one per (decoder) block when inspect
  // Encoder–decoder models: per decoder block, the cross-attention's statistics and its gates'
  // values; per encoder block, its statistics. Empty for a decoder.
  std::vector<LayerStats> cross_stats, encoder_stats;
  std::vector<LayerInspection> cross_inspection, encoder_inspection;

  // The regulariser `name`, or an undefined tensor when it was not computed.
  Tensor regularizer(const std::string& name) const;
};

class GPT : public nn::Module {
 public:
  // Builds and initialises the model from `config` (validated; vocab_size must be set) with the
  // Philox stream seeded by `seed`.
  GPT(const ModelConfig& config, std::uint64_t seed);

  // idx: i32 [B, T] with T <= block_size; targets: i32 [B, T] or undefined.
  ForwardResult forward(const Tensor& idx, const Tensor& targets = Tensor(), const ForwardOptions& options = {});

  // Generation with a KV cache: runs the new tokens idx i32 [B, n] at positions cache.position() …
  // cache.position()+n−1 (at most model.block_size in all), appends them to `cache` and returns their
  // logits [B, n, V]. With the cache's default options, the same function as forward() in eval mode
  // (no gumbel noise), at O(context) per token; under a KV budget it first evicts what the new
  // positions displace (models/kv_policy.h; n must fit the budget). Never records autograd history.
  Tensor forward_cached(const Tensor& idx, KVCache& cache);
  // The same with the new tokens at absolute positions position … position+n−1, for a cache that
  // starts past the sequence's start: an empty cache starts at `position`, one that holds rows must
  // continue at cache.position(). The positions take wpe rows (learned: position+n ≤ block_size) or
  // rotate q and k (rope: any position ≥ 0); the cached keys keep the positions they were written at.
  Tensor forward_cached(const Tensor& idx, KVCache& cache, std::int64_t position);
  // Encoder–decoder generation: runs the encoder on `source` i32 [B, S] (eval-mode math, no
  // autograd) and puts each decoder block's cross-attention memory into cache.cross, after which
  // forward_cached decodes against it. Clears the cache's positions.
  void encode_source(const Tensor& source, KVCache& cache);

  const ModelConfig& config() const { return config_; }
  // Training-time noise (gumbel_sigmoid, gate dropout) draws from this generator; checkpoints save
  // its state.
  Generator& noise_generator() { return noise_; }

  // The optimizer steps done, which fixes where the scheduled gate options stand (a temperature
  // schedule, an effect ramp) in every forward: the trainer sets it before each step and eval, a
  // model loaded from a checkpoint takes the checkpoint's step. 0 for a new model.
  void set_step(std::int64_t step) { step_ = step; }
  std::int64_t step() const { return step_; }

  // Model FLOPs per token for one forward + backward (training) step at sequence length T:
  // 6·N_matmul + Σ_layers 12·C·k̄ (QKᵀ and AV over the k̄ keys a query visits, ×3 for backward),
  // with N_matmul the parameters that enter matrix products (the tied head, the blocks and each
  // gate's registered multiply-adds). k̄ is T/2 for a causal attention; a gate that mixes
  // attentions registers its own (a span 0 < w < T visits w − w²/(2T) keys per query).
  double flops_per_token(std::int64_t T) const;

  std::shared_ptr<nn::Embedding> wte, wpe;  // wpe: learned positions only (null with model.position rope)
  std::shared_ptr<Encoder> encoder;         // encoder_decoder only
  std::shared_ptr<nn::ModuleList<Block>> blocks;
  std::shared_ptr<nn::Norm> ln_f;
  std::shared_ptr<nn::Linear> lm_head;  // model.tie_embeddings false only: the head's own [V, C] (no bias)

 private:
  // The logits [B, T, V] of the final stream x (after ln_f): the tied or the untied head.
  Tensor head(const Tensor& x) const;
  // The token and (learned) position embeddings of ids [B, T] at positions first … first+T−1.
  Tensor embed(const Tensor& ids, std::int64_t first) const;
  // The encoder output [B, S, C] of `source`, reporting into `result`'s encoder statistics and
  // inspection; sets ctx.key_padding for the source.
  Tensor encode(const Tensor& source, AttentionContext& ctx, const ForwardOptions& options, ForwardResult& result);

  ModelConfig config_;
  Generator noise_;
  std::int64_t step_ = 0;
};

}  // namespace gattn::models
