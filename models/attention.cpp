// GatedAttention (qkv projection, the block's gates in their fixed order, output projection), the
// head layout helpers and LayerStats' averages.
#include "models/attention.h"

#include <algorithm>
#include <cmath>

#include "models/gating/gate.h"
#include "models/gating/registry.h"
#include "models/parts/norm.h"
#include "models/regularizers.h"
#include "ops/elementwise.h"
#include "ops/rope.h"
#include "ops/shape.h"

namespace gattn::models {

double LayerStats::attn_entropy() const {
  return attention.entropy_count ? attention.entropy_sum / static_cast<double>(attention.entropy_count) : 0.0;
}

double LayerStats::sink_ratio() const {
  return attention.sink_count ? attention.sink_sum / static_cast<double>(attention.sink_count) : 0.0;
}

std::optional<double> LayerStats::pruned_tile_frac() const {
  const std::int64_t pairs = attention.pruned_tiles + attention.visited_tiles;
  if (pairs == 0) return std::nullopt;
  return static_cast<double>(attention.pruned_tiles) / static_cast<double>(pairs);
}

Tensor merge_heads(const Tensor& y) {
  if (y.dim() != 4) throw ShapeError("merge_heads: expected [B, H, T, d], got " + shape_str(y.shape()));
  const std::int64_t B = y.size(0), H = y.size(1), T = y.size(2), d = y.size(3);
  return ops::reshape(ops::permute(y, {0, 2, 1, 3}), {B, T, H * d});
}

Tensor split_heads(const Tensor& x, std::int64_t n_head) { return ops::split_heads(x, 1, n_head)[0]; }

std::string gate_parameter_prefix(const ModelConfig& config, std::int64_t layer, const std::string& kind,
                                  const std::string& site) {
  const GateKindSpec& spec = gate_kind(kind);
  std::string attn = site == kSiteEncoder ? "encoder.blocks." : "blocks.";
  attn.append(std::to_string(layer)).append(site == kSiteCross ? ".cross." : ".attn.");
  if (spec.module_name != "gate") return attn + spec.module_name + ".";
  return config.layer_gates(layer, site).size() >= 2 ? attn + "gate." + kind + "." : attn + "gate.";
}

namespace {

// The module that holds a block's gates under attn.gate.<kind>. when it has two or more.
class GateSet : public nn::Module {
 public:
  void add(const std::string& kind, std::shared_ptr<nn::Module> gate) { register_module(kind, std::move(gate)); }
};

// i32 [B, H, n]: the positions first … first+n−1 of new cache rows, for every head.
Tensor new_positions(std::int64_t B, std::int64_t H, std::int64_t n, std::int64_t first) {
  std::vector<std::int32_t> p(static_cast<std::size_t>(B * H * n));
  for (std::size_t r = 0; r < p.size(); ++r) p[r] = static_cast<std::int32_t>(first + static_cast<std::int64_t>(r) % n);
  return Tensor::from_ints(p, {B, H, n});
}

}  // namespace

GatedAttention::GatedAttention(const ModelConfig& config, std::int64_t layer, Generator& init, const std::string& site)
    : n_head_(config.n_head),
      n_kv_head_(config.kv_heads()),
      head_dim_(config.head_dim()),
      rope_(config.rope()),
      rope_theta_(config.rope_theta),
      rope_fraction_(config.rope_fraction),
      causal_(site != kSiteEncoder) {
  const std::int64_t C = config.n_embd, Hd = config.attention_width();
  nn::LinearOptions qkv_opt;
  qkv_opt.dtype = config.dtype;
  qkv_opt.bias = config.has_qkv_bias();
  // The rows of the H query heads, then of the H_kv key heads and the H_kv value heads.
  qkv = register_module("qkv", std::make_shared<nn::Linear>(C, (n_head_ + 2 * n_kv_head_) * head_dim_, init, qkv_opt));
  // GPT-2: residual projections start at 0.02/√(2L) so the residual stream's variance does not
  // grow with depth.
  nn::LinearOptions proj_opt = qkv_opt;
  proj_opt.bias = config.bias;
  proj_opt.init_std = residual_init_std(config, site);
  proj = register_module("proj", std::make_shared<nn::Linear>(Hd, C, init, proj_opt));
  // Qwen3's per-head norms of q and k (no draws: the stream is unchanged).
  if (auto norm = make_qk_norm(config)) {
    q_norm = register_module("q_norm", norm);
    k_norm = register_module("k_norm", make_qk_norm(config));
  }
  add_gates(config, layer, site, init);
}

std::int64_t residual_layers(const ModelConfig& config, const std::string& site) {
  return site == kSiteEncoder ? config.encoder_layers() : config.n_layer;
}

double residual_init_std(const ModelConfig& config, const std::string& site) {
  return 0.02 / std::sqrt(2.0 * static_cast<double>(residual_layers(config, site)));
}

void GateHost::add_gates(const ModelConfig& config, std::int64_t layer, const std::string& site, Generator& init) {
  const std::vector<GateConfig> entries = config.layer_gates(layer, site);
  // Two or more gates in the block: attn.gate.<kind>. for each (a router keeps attn.router.).
  const bool several = entries.size() >= 2;
  int under_gate = 0;  // gates whose parameters go under attn.gate.
  for (const GateConfig& g : entries) under_gate += gate_kind(g.kind).module_name == "gate";
  std::shared_ptr<GateSet> set =
      several && under_gate > 0 ? register_module("gate", std::make_shared<GateSet>()) : nullptr;
  for (const GateConfig& g : entries) {
    const GateKindSpec& kind = gate_kind(g.kind);
    std::shared_ptr<Gate> gate = kind.make(config, g, init);
    // One gate keeps the kind's plain names (attn.gate.weight); several go under attn.gate.<kind>.
    // A kind with its own module name (attn.router.) keeps it either way.
    if (kind.module_name != "gate")
      register_module(kind.module_name, gate);
    else if (set)
      set->add(kind.name, gate);
    else
      register_module("gate", gate);
    gates.push_back(std::move(gate));
  }
  int mixtures = 0;
  for (const auto& g : gates) mixtures += g->mixes_attention();
  if (mixtures > 1) throw ValueError("model.gates: a block can mix its attention by one gate only");
}

AttentionInputs GatedAttention::project(const Tensor& h, const Tensor& x) const {
  if (h.dim() != 3 || x.dim() != 3 || x.size(2) != qkv->weight.size(1))
    throw ShapeError("GatedAttention: expected h [B, T, " + std::to_string(qkv->weight.size(1)) + "], got " +
                     shape_str(x.shape()));
  AttentionInputs in{h, Tensor(), Tensor(), Tensor()};
  const Tensor packed = qkv->forward(x);
  if (n_kv_head_ == n_head_) {
    std::vector<Tensor> q_k_v = ops::split_heads(packed, 3, n_head_);
    in.q = q_k_v[0];
    in.k = q_k_v[1];
    in.v = q_k_v[2];
  } else {
    // Grouped-query: H query heads, H_kv key and value heads, each [B, heads, T, d].
    const std::int64_t q_width = n_head_ * head_dim_, kv_width = n_kv_head_ * head_dim_;
    std::vector<Tensor> parts = ops::split(packed, {q_width, kv_width, kv_width}, 2);
    in.q = split_heads(parts[0], n_head_);
    in.k = split_heads(parts[1], n_kv_head_);
    in.v = split_heads(parts[2], n_kv_head_);
  }
  if (q_norm) {
    in.q = q_norm->forward(in.q);
    in.k = k_norm->forward(in.k);
  }
  return in;
}

AttentionInputs GatedAttention::rotated(const AttentionInputs& in, std::int64_t first_position) const {
  if (!rope_) return in;
  AttentionInputs out = in;
  const Tensor positions = ops::position_ids(first_position, in.q.size(2), in.q.device());
  out.q = ops::rope(in.q, positions, rope_theta_, rope_fraction_);
  out.k = ops::rope(in.k, positions, rope_theta_, rope_fraction_);
  return out;
}

Tensor GatedAttention::forward(const Tensor& h, AttentionContext& ctx) {
  AttentionInputs in{h, Tensor(), Tensor(), Tensor()};
  Tensor x = h;
  for (const auto& g : gates) x = g->gate_input(in, x, ctx);
  return proj->forward(attend(project(h, x), ctx));
}

Tensor GatedAttention::attend(const AttentionInputs& projected, AttentionContext& ctx) {
  AttentionInputs in = projected;
  for (const auto& g : gates) g->gate_qk(in, ctx);
  ops::AttentionTerms terms;
  Gate* mixture = nullptr;
  for (const auto& g : gates) {
    g->add_terms(in, terms, ctx);
    if (g->mixes_attention()) mixture = g.get();
  }
  if (!causal_ && ctx.key_padding.defined()) accumulate(terms.col_bias, ctx.key_padding);
  // The full forward's rows sit at positions 0 … T−1.
  const AttentionInputs attention_in = rotated(in, 0);
  ops::AttentionOptions options;
  options.causal = causal_;
  // The gates' pruning threshold (forget's prune_threshold); the bound needs a causal mask.
  for (const auto& g : gates)
    if (causal_) options.prune_threshold = std::max(options.prune_threshold, g->prune_threshold());
  Tensor y = mixture ? mixture->attend(attention_in, terms, ctx) : run_attention(attention_in, terms, ctx, options).out;
  for (const auto& g : gates) y = g->gate_heads(in, y, ctx);
  y = merge_heads(y);
  for (const auto& g : gates) y = g->gate_output(in, y, ctx);
  return y;
}

Tensor GatedAttention::forward_cached(const Tensor& h, LayerKVCache& cache, const CachedStep& at) {
  AttentionContext eval;  // generation: eval-mode math, nothing reported
  eval.step = at.step;
  AttentionInputs in{h, Tensor(), Tensor(), Tensor()};
  Tensor x = h;
  for (const auto& g : gates) x = g->gate_input(in, x, eval);
  in = project(h, x);
  for (const auto& g : gates) g->gate_qk(in, eval);
  // The cache holds the gated k, rotated at its absolute position (rope), as the attention takes it.
  // The per-row terms hold one row per query head (H), k and v one per key head.
  const std::int64_t pos = at.row, B = cache.k.size(0), H = cache.query_heads, n = h.size(1);
  const AttentionInputs attention_in = rotated(in, at.position);
  write_cache_rows(cache.k, attention_in.k, pos);
  write_cache_rows(cache.v, in.v, pos);
  // The new rows' column terms are summed over the gates, and their accumulated attention starts
  // at 0: clear what an earlier position left in those rows.
  for (Tensor* summed : {&cache.col_bias, &cache.key_attention})
    if (summed->defined()) write_cache_rows(*summed, Tensor::zeros({B, H, n}, cache.k.dtype()), pos);
  if (cache.key_positions.defined()) write_cache_rows(cache.key_positions, new_positions(B, H, n, at.position), pos);
  ops::CachedAttentionInputs terms;
  if (at.options) {
    terms.top_k_keys = at.options->top_k_keys;
    if (at.options->skip_heads_below > 0) terms.skip_rows = skipped_rows(in, eval, *at.options, at.counters);
  }
  if (at.counters) at.counters->head_queries += B * H * n;
  Gate* mixture = nullptr;
  for (const auto& g : gates) {
    g->add_cached_terms(in, cache, pos, terms, eval);
    if (g->mixes_attention()) mixture = g.get();
  }
  terms.col_bias = cache.col_bias;  // allocated by the first gate with a column term, if any
  Tensor y = mixture ? mixture->attend_cached(attention_in, cache, pos, terms, eval)
                     : run_cached_attention(attention_in, cache, pos, terms);
  for (const auto& g : gates) y = g->gate_heads(in, y, eval);
  y = merge_heads(y);
  for (const auto& g : gates) y = g->gate_output(in, y, eval);
  return proj->forward(y);
}

Tensor GatedAttention::skipped_rows(const AttentionInputs& in, const AttentionContext& ctx,
                                    const InferenceOptions& options, InferenceCounters* counters) const {
  Tensor gate;  // [B, H, n]: the product of the block's whole-head gates
  for (const auto& g : gates)
    if (g->gates_whole_heads()) gate = gate.defined() ? gate * g->head_gate(in, ctx) : g->head_gate(in, ctx);
  if (!gate.defined()) return Tensor();
  const std::vector<double> values = gate.to_vector();
  std::vector<std::int32_t> skip(values.size());
  std::int64_t skipped = 0;
  for (std::size_t r = 0; r < values.size(); ++r) skipped += skip[r] = values[r] < options.skip_heads_below;
  if (counters) counters->skipped += skipped;
  return Tensor::from_ints(skip, gate.shape());
}

}  // namespace gattn::models
