// The cross-attention of an encoder–decoder's decoder block (prefix `blocks.<n>.cross.`): queries
// from the decoder's normalised state, keys and values from the encoder output, no mask but the
// source's padding, and the block's cross gates (`where: cross`) through the same hooks as
// GatedAttention's, plus merge_state, which decides the decoder state after the sublayer.
#pragma once
#include <cstdint>
#include <memory>

#include "framework/nn/layers.h"
#include "models/attention.h"
#include "models/config.h"
#include "models/kv_cache.h"

namespace gattn::models {

class CrossAttention : public GateHost {
 public:
  CrossAttention(const ModelConfig& config, std::int64_t layer, Generator& init);
  // What every query of the decoder attends over, from the encoder output `memory` [B, S, C]: keys
  // and values per head and the column terms (the padding in ctx.key_padding, the key gates'
  // terms). Computed once per source: in each forward, and once per generation (KVCache::cross).
  CrossMemory prepare(const Tensor& memory, AttentionContext& ctx) const;
  // The new decoder state from the state s [B, T, C] and its normalised form h = ln_cross(s):
  // s + cross.proj(attention) without a gate that merges, g ⊙ c + (1 − g) ⊙ s with the context gate.
  Tensor forward(const Tensor& s, const Tensor& h, const CrossMemory& memory, AttentionContext& ctx);

  std::shared_ptr<nn::Linear> q, kv, proj;

 private:
  std::int64_t n_head_, n_kv_head_, head_dim_, n_embd_;
};

}  // namespace gattn::models
