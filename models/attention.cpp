// GatedAttention (qkv projection, the layer's gate, output projection), the head layout helpers
// and LayerStats' averages.
#include "models/attention.h"

#include <cmath>

#include "ops/shape.h"

namespace gattn::models {

double LayerStats::attn_entropy() const {
  return attention.entropy_count ? attention.entropy_sum / static_cast<double>(attention.entropy_count) : 0.0;
}

double LayerStats::sink_ratio() const {
  return attention.sink_count ? attention.sink_sum / static_cast<double>(attention.sink_count) : 0.0;
}

Tensor merge_heads(const Tensor& y) {
  if (y.dim() != 4) throw ShapeError("merge_heads: expected [B, H, T, d], got " + shape_str(y.shape()));
  const std::int64_t B = y.size(0), H = y.size(1), T = y.size(2), d = y.size(3);
  return ops::reshape(ops::permute(y, {0, 2, 1, 3}), {B, T, H * d});
}

Tensor split_heads(const Tensor& x, std::int64_t n_head) {
  if (x.dim() != 3 || n_head <= 0 || x.size(2) % n_head != 0)
    throw ShapeError("split_heads: expected [B, T, C] with C divisible by n_head=" + std::to_string(n_head) + ", got " +
                     shape_str(x.shape()));
  const std::int64_t B = x.size(0), T = x.size(1), d = x.size(2) / n_head;
  return ops::permute(ops::reshape(x, {B, T, n_head, d}), {0, 2, 1, 3});
}

GatedAttention::GatedAttention(const ModelConfig& config, std::int64_t layer, Generator& init)
    : n_head_(config.n_head), head_dim_(config.head_dim()) {
  const std::int64_t C = config.n_embd;
  nn::LinearOptions qkv_opt;
  qkv_opt.dtype = config.dtype;
  qkv = register_module("qkv", std::make_shared<nn::Linear>(C, 3 * C, init, qkv_opt));
  // GPT-2: residual projections start at 0.02/√(2L) so the residual stream's variance does not
  // grow with depth.
  nn::LinearOptions proj_opt = qkv_opt;
  proj_opt.init_std = 0.02 / std::sqrt(2.0 * static_cast<double>(config.n_layer));
  proj = register_module("proj", std::make_shared<nn::Linear>(C, C, init, proj_opt));
  ModelConfig layer_config = config;
  if (!config.gate.applies_to(layer)) layer_config.gate.kind = GateKind::none;
  gate = make_gate(layer_config, init);
  register_module(gate->registered_name(), gate->registered_module(gate));
}

AttentionInputs GatedAttention::project(const Tensor& h) const {
  if (h.dim() != 3 || h.size(2) != n_head_ * head_dim_)
    throw ShapeError("GatedAttention: expected h [B, T, " + std::to_string(n_head_ * head_dim_) + "], got " +
                     shape_str(h.shape()));
  const std::int64_t C = n_head_ * head_dim_;
  std::vector<Tensor> qkv_parts = ops::split(qkv->forward(h), {C, C, C}, 2);
  return {h, split_heads(qkv_parts[0], n_head_), split_heads(qkv_parts[1], n_head_),
          split_heads(qkv_parts[2], n_head_)};
}

Tensor GatedAttention::forward(const Tensor& h, AttentionContext& ctx) {
  return proj->forward(gate->attend(project(h), ctx));
}

Tensor GatedAttention::forward_cached(const Tensor& h, LayerKVCache& cache, std::int64_t pos) {
  AttentionInputs in = project(h);
  write_cache_rows(cache.k, in.k, pos);
  write_cache_rows(cache.v, in.v, pos);
  return proj->forward(gate->attend_cached(in, cache, pos));
}

}  // namespace gattn::models
