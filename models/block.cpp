// Block and Encoder: the parts in their order (norm → attention → [norm → cross-attention] → norm →
// MLP, each added to the residual stream) and the order the initialisation draws in.
#include "models/block.h"

#include "models/parts/norm.h"
#include "ops/elementwise.h"

namespace gattn::models {

Block::Block(const ModelConfig& config, std::int64_t layer, Generator& init, const std::string& site) {
  const std::int64_t C = config.n_embd;
  ln1 = register_module("ln1", make_norm(config, C));
  attn = register_module("attn", std::make_shared<GatedAttention>(config, layer, init, site));
  // The initialisation draws in this order (attn, cross, mlp), so a decoder's stream is unchanged.
  if (site == kSiteSelf && config.encoder_decoder()) {
    ln_cross = register_module("ln_cross", make_norm(config, C));
    cross = register_module("cross", std::make_shared<CrossAttention>(config, layer, init));
  }
  ln2 = register_module("ln2", make_norm(config, C));
  mlp = register_module("mlp", std::make_shared<Mlp>(config, init, site));
}

Tensor Block::forward(const Tensor& x, AttentionContext& ctx, const Tensor& memory) {
  Tensor y = x + attn->forward(ln1->forward(x), ctx);
  if (cross) {
    if (!memory.defined()) throw ValueError("Block.forward: a cross-attention block needs the encoder output");
    y = with_cross(y, memory, ctx);
  }
  return with_mlp(y);
}

Tensor Block::forward_cached(const Tensor& x, LayerKVCache& cache, const CachedStep& at, const CrossMemory* memory) {
  Tensor y = x + attn->forward_cached(ln1->forward(x), cache, at);
  if (cross) {
    if (!memory) throw ValueError("Block.forward_cached: a cross-attention block needs the source's memory");
    AttentionContext eval;  // generation: eval-mode math, nothing reported
    eval.step = at.step;
    y = cross->forward(y, ln_cross->forward(y), *memory, eval);
  }
  return with_mlp(y);
}

Tensor Block::with_cross(const Tensor& y, const Tensor& memory, AttentionContext& ctx) {
  LayerStats* self_stats = ctx.stats;
  LayerInspection* self_inspect = ctx.inspect;
  ctx.stats = ctx.collect_stats ? ctx.cross_stats : nullptr;
  ctx.inspect = ctx.cross_inspect;
  // The memory's keys, values and key gates belong to the sublayer: prepared inside its reporting.
  const CrossMemory prepared = cross->prepare(memory, ctx);
  Tensor out = cross->forward(y, ln_cross->forward(y), prepared, ctx);
  // The block's gate statistics pool all its gates: the cross gates' values count there too.
  if (self_stats && ctx.stats) self_stats->gate.merge(ctx.stats->gate);
  ctx.stats = self_stats;
  ctx.inspect = self_inspect;
  return out;
}

Encoder::Encoder(const ModelConfig& config, Generator& init) {
  blocks = register_module("blocks", std::make_shared<nn::ModuleList<Block>>());
  for (std::int64_t i = 0; i < config.encoder_layers(); ++i)
    blocks->push_back(std::make_shared<Block>(config, i, init, kSiteEncoder));
  ln_f = register_module("ln_f", make_norm(config, config.n_embd));
}

Tensor Block::with_mlp(const Tensor& y) { return y + mlp->forward(ln2->forward(y)); }

}  // namespace gattn::models
