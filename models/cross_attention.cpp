// CrossAttention: the keys and values of the encoder output, computed once per source, and the
// gated attention of the decoder's queries over them.
#include "models/cross_attention.h"

#include "models/gating/gate.h"
#include "models/regularizers.h"
#include "ops/elementwise.h"
#include "ops/shape.h"

namespace gattn::models {

CrossAttention::CrossAttention(const ModelConfig& config, std::int64_t layer, Generator& init)
    : n_head_(config.n_head), n_kv_head_(config.kv_heads()), head_dim_(config.head_dim()), n_embd_(config.n_embd) {
  const std::int64_t C = config.n_embd, Hd = config.attention_width();
  nn::LinearOptions opt;
  opt.dtype = config.dtype;
  opt.bias = config.has_qkv_bias();
  q = register_module("q", std::make_shared<nn::Linear>(C, Hd, init, opt));
  // The rows of the H_kv key heads, then of the H_kv value heads.
  kv = register_module("kv", std::make_shared<nn::Linear>(C, 2 * n_kv_head_ * head_dim_, init, opt));
  nn::LinearOptions proj_opt = opt;
  proj_opt.bias = config.bias;
  proj_opt.init_std = residual_init_std(config, kSiteCross);
  proj = register_module("proj", std::make_shared<nn::Linear>(Hd, C, init, proj_opt));
  add_gates(config, layer, kSiteCross, init);
  int merging = 0;
  for (const auto& g : gates) merging += g->merges_state();
  if (merging > 1) throw ValueError("model.gates: a cross-attention can merge the decoder state by one gate only");
}

CrossMemory CrossAttention::prepare(const Tensor& memory, AttentionContext& ctx) const {
  if (memory.dim() != 3 || memory.size(2) != n_embd_)
    throw ShapeError("CrossAttention: expected the encoder output [B, S, " + std::to_string(n_embd_) + "], got " +
                     shape_str(memory.shape()));
  CrossMemory out;
  out.memory = memory;
  std::vector<Tensor> k_v = ops::split_heads(kv->forward(memory), 2, n_kv_head_);
  out.k = k_v[0];
  out.v = k_v[1];
  if (ctx.key_padding.defined()) out.terms.col_bias = ctx.key_padding;
  // The key gates read the memory (AttentionInputs::key_source); nothing here depends on a query.
  const AttentionInputs keys{Tensor(), Tensor(), out.k, out.v, memory};
  const bool was_reporting_keys = ctx.reporting_keys;
  ctx.reporting_keys = true;  // their values run along the source's positions
  for (const auto& g : gates) g->add_terms(keys, out.terms, ctx);
  ctx.reporting_keys = was_reporting_keys;
  return out;
}

Tensor CrossAttention::forward(const Tensor& s, const Tensor& h, const CrossMemory& memory, AttentionContext& ctx) {
  AttentionInputs in{h, Tensor(), memory.k, memory.v, memory.memory};
  Tensor x = h;
  for (const auto& g : gates) x = g->gate_input(in, x, ctx);
  in.q = split_heads(q->forward(x), n_head_);
  for (const auto& g : gates) g->gate_qk(in, ctx);
  ops::AttentionOptions options;
  options.causal = false;
  Tensor y = run_attention(in, memory.terms, ctx, options).out;
  for (const auto& g : gates) y = g->gate_heads(in, y, ctx);
  y = merge_heads(y);
  for (const auto& g : gates) y = g->gate_output(in, y, ctx);
  const Tensor c = proj->forward(y);
  for (const auto& g : gates)
    if (g->merges_state()) return g->merge_state(in, s, c, ctx);
  return s + c;
}

}  // namespace gattn::models
