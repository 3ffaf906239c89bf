// The block assembly: one pre-norm block made of named parts picked by the model keys — the norm
// (models/parts/norm.h), the attention with its gates and positions (models/attention.h), the
// cross-attention of an encoder–decoder's decoder (models/cross_attention.h) and the MLP
// (models/parts/mlp.h) — used by the decoder, the encoder and the encoder–decoder's decoder alike.
#pragma once
#include <memory>
#include <string>

#include "core/tensor/random.h"
#include "framework/nn/layers.h"
#include "framework/nn/module.h"
#include "models/attention.h"
#include "models/config.h"
#include "models/cross_attention.h"
#include "models/kv_cache.h"
#include "models/parts/mlp.h"

namespace gattn::models {

// A pre-LN block: self-attention, then (a decoder block of an encoder–decoder) cross-attention over
// the encoder output, then the MLP, each added to the residual stream.
class Block : public nn::Module {
 public:
  // `site`: kSiteSelf for a decoder block (with cross-attention when the model is an
  // encoder_decoder), kSiteEncoder for an encoder block (bidirectional self-attention).
  Block(const ModelConfig& config, std::int64_t layer, Generator& init, const std::string& site = kSiteSelf);
  // x [B, T, C] -> [B, T, C]; `memory` is the encoder output [B, S, C] (decoder blocks of an
  // encoder–decoder only; undefined otherwise).
  Tensor forward(const Tensor& x, AttentionContext& ctx, const Tensor& memory = Tensor());
  // Generation: x [B, n, C] of n new positions, appended to this block's cache (`at` says where);
  // `cross` is the source's memory for the cross-attention (null without one).
  Tensor forward_cached(const Tensor& x, LayerKVCache& cache, const CachedStep& at, const CrossMemory* cross = nullptr);
  std::shared_ptr<nn::Norm> ln1, ln2;
  std::shared_ptr<GatedAttention> attn;
  std::shared_ptr<nn::Norm> ln_cross;     // cross-attention blocks only
  std::shared_ptr<CrossAttention> cross;  // cross-attention blocks only
  std::shared_ptr<Mlp> mlp;

 private:
  Tensor with_mlp(const Tensor& y);  // y + mlp(ln2(y))
  // The cross sublayer over the encoder output `memory`, reporting into ctx.cross_stats /
  // ctx.cross_inspect (its gate values pooled into the block's ctx.stats too).
  Tensor with_cross(const Tensor& y, const Tensor& memory, AttentionContext& ctx);
};

// The encoder of an encoder–decoder (prefix `encoder.`): its blocks and final LayerNorm. The token
// and position embeddings are the model's (wte, wpe), shared with the decoder.
class Encoder : public nn::Module {
 public:
  Encoder(const ModelConfig& config, Generator& init);
  std::shared_ptr<nn::ModuleList<Block>> blocks;
  std::shared_ptr<nn::Norm> ln_f;
};

}  // namespace gattn::models
