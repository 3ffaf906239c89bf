// CrossAttention: the keys and values of the encoder output, computed once per source, and the
// gated attention of the decoder's queries over them.
#include "models/cross_attention.h"

#include "models/gating/gate.h"
#include "models/regularizers.h"
#include "ops/elementwise.h"
#include "ops/shape.h"

namespace gattn::models {

CrossAttention::CrossAttention(const ModelConfig& config, std::int64_t layer, Generator& init)
    : n_head_(config.n_head), head_dim_(config.head_dim()) {
  const std::int64_t C = config.n_embd;
  nn::LinearOptions opt;
  opt.dtype = config.dtype;
  q = register_module("q", std::make_shared<nn::Linear>(C, C, init, opt));
  kv = register_module("kv", std::make_shared<nn::Linear>(C, 2 * C, init, opt));
  nn::LinearOptions proj_opt = opt;
  proj_opt.init_std = residual_init_std(config, kSiteCross);
  proj = register_module("proj", std::make_shared<nn::Linear>(C, C, init, proj_opt));
  add_gates(config, layer, kSiteCross, init);
  int merging = 0;
  for (const auto& g : gates) merging += g->merges_state();
  if (merging > 1) throw ValueError("model.gates: a cross-attention can merge the decoder state by one gate only");
}

CrossMemory CrossAttention::prepare(const Tensor& memory, AttentionContext& ctx) const {
  const std::int64_t C = n_head_ * head_dim_;
  if (memory.dim() != 3 || memory.size(2) != C)
    throw ShapeError("CrossAttention: expected the encoder output [B, S, " + std::to_string(C) + "], got " +
                     shape_str(memory.shape()));
  CrossMemory out;
  out.memory = memory;
  std::vector<Tensor> k_v = ops::split_heads(kv->forward(memory), 2, n_head_);
  out.k = k_v[0];
  out.v = k_v[1];
  if (ctx.key_padding.defined()) out.terms.col_bias = ctx.key_padding;
  // The key gates read the memory (AttentionInputs::key_source); nothing here depends on a query.
  const AttentionInputs keys{Tensor(), Tensor(), out.k, out.v, memory};
  for (const auto& g : gates) g->add_terms(keys, out.terms, ctx);
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
