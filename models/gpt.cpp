// The GPT: embeddings, pre-LN blocks with gated attention and a GELU MLP, the tied head,
// the loss, the regularisers averaged over the whole model, and the per-layer statistics.
#include "models/gpt.h"

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "core/autograd/grad_mode.h"
#include "framework/data/seq2seq_tokens.h"
#include "models/gating/registry.h"
#include "models/kv_policy.h"
#include "models/parts/norm.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/nn_functional.h"
#include "ops/reduce.h"
#include "ops/rope.h"
#include "ops/shape.h"
#include "ops/unary.h"

namespace gattn::models {

namespace {

constexpr std::uint64_t kInitStream = 0;   // Philox stream of the initialisation
constexpr std::uint64_t kNoiseStream = 1;  // Philox stream of the training noise (gumbel_sigmoid)

}  // namespace

namespace {

const ModelConfig& checked(const ModelConfig& config) {
  config.validate();
  if (config.vocab_size <= 0)
    throw ValueError("model.vocab_size: must be set (> 0) to build the model, got " +
                     std::to_string(config.vocab_size));
  return config;
}

// max |x| over every element (the residual stream's act_max), on log and eval steps only. A CUDA
// tensor is reduced on its device, max|x| = max(max x, max −x) row by row, so one value per row
// crosses to the host: copying the whole [B, T, C] stream back per layer made the statistics steps
// of a GPT-2-sized run several times slower than the others. A NaN is skipped, as on the host.
double max_abs(const Tensor& x) {
  double m = 0;
  if (x.numel() == 0) return m;
  if (x.device() == Device::cpu) {
    for (double v : x.to_vector()) m = std::max(m, std::abs(v));
    return m;
  }
  const autograd::NoGradGuard no_grad;
  const Tensor rows = ops::reshape(x.detach(), {x.numel() / x.size(-1), x.size(-1)});
  for (const Tensor& row_max : {ops::amax_last(rows), ops::amax_last(ops::neg(rows))})
    for (double v : row_max.to(Device::cpu).to_vector()) m = std::max(m, v);
  return m;
}

void check_token_ids(const Tensor& idx, std::int64_t vocab_size, const char* who) {
  // Ids on the GPU are checked where they are used: the embedding's device-side scan reads back one
  // integer, where a host copy here would move the whole batch back every step.
  if (idx.device() != Device::cpu) return;
  const std::int32_t* ids = idx.data<std::int32_t>();
  for (std::int64_t n = 0; n < idx.numel(); ++n)
    if (ids[n] < 0 || ids[n] >= vocab_size)
      throw ValueError(std::string(who) + ": token id " + std::to_string(ids[n]) + " at position " + std::to_string(n) +
                       " is outside [0, model.vocab_size=" + std::to_string(vocab_size) + ")");
}

}  // namespace

GPT::GPT(const ModelConfig& config, std::uint64_t seed) : config_(checked(config)), noise_(seed, kNoiseStream) {
  Generator init(seed, kInitStream);
  const std::int64_t C = config_.n_embd;
  wte = register_module("wte", std::make_shared<nn::Embedding>(config_.vocab_size, C, init, 0.02, config_.dtype));
  // Rotary positions live in the attention (q, k rotated per head): no table.
  if (config_.learned_positions())
    wpe = register_module("wpe", std::make_shared<nn::Embedding>(config_.block_size, C, init, 0.02, config_.dtype));
  if (config_.encoder_decoder()) encoder = register_module("encoder", std::make_shared<Encoder>(config_, init));
  blocks = register_module("blocks", std::make_shared<nn::ModuleList<Block>>());
  for (std::int64_t i = 0; i < config_.n_layer; ++i) blocks->push_back(std::make_shared<Block>(config_, i, init));
  ln_f = register_module("ln_f", make_norm(config_, C));
  // An untied head draws after everything else, so the tied model's stream is unchanged.
  if (!config_.tie_embeddings) {
    nn::LinearOptions head;
    head.bias = false;
    head.dtype = config_.dtype;
    lm_head = register_module("lm_head", std::make_shared<nn::Linear>(C, config_.vocab_size, init, head));
  }
}

Tensor GPT::head(const Tensor& x) const {
  // Tied: logits = x·wteᵀ; untied: x·lm_headᵀ.
  return ops::linear(x, lm_head ? lm_head->weight : wte->weight);
}

Tensor GPT::embed(const Tensor& ids, std::int64_t first) const {
  Tensor x = wte->forward(ids);                                                        // [B, T, C]
  if (wpe) x = x + wpe->forward(ops::position_ids(first, ids.size(1), ids.device()));  // + [T, C]
  return x;
}

namespace {

// [B, H, S]: kPaddingBias on the source's kSeq2SeqPad positions, 0 elsewhere; undefined when the
// source has none (the synthetic tasks), so unpadded batches pay nothing.
constexpr double kPaddingBias = -1e9;  // exp of it is 0 in f32 and f64: the key gets no weight

Tensor padding_bias(const Tensor& source, std::int64_t heads, DType dtype) {
  const Tensor host = source.to(Device::cpu);
  const std::int32_t* ids = host.data<std::int32_t>();
  const std::int64_t B = source.size(0), S = source.size(1);
  bool any = false;
  std::vector<double> bias(static_cast<std::size_t>(B * heads * S), 0.0);
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t j = 0; j < S; ++j) {
      if (ids[b * S + j] != kSeq2SeqPad) continue;
      any = true;
      for (std::int64_t h = 0; h < heads; ++h) bias[static_cast<std::size_t>((b * heads + h) * S + j)] = kPaddingBias;
    }
  // A source of padding only would leave its queries nothing to attend to.
  for (std::int64_t b = 0; b < B; ++b)
    if (ids[b * S] == kSeq2SeqPad)
      throw ValueError("GPT: source row " + std::to_string(b) + " starts with padding (id " +
                       std::to_string(kSeq2SeqPad) + "): a source needs at least one token");
  return any ? Tensor::from(bias, {B, heads, S}, dtype).to(source.device()) : Tensor();
}

}  // namespace

Tensor GPT::encode(const Tensor& source, AttentionContext& ctx, const ForwardOptions& options, ForwardResult& result) {
  if (source.dtype() != DType::i32 || source.dim() != 2 || source.numel() == 0)
    throw ShapeError("GPT.forward: the source must be non-empty i32 [B, S], got " + source.str());
  const std::int64_t S = source.size(1);
  if (S > config_.block_size)
    throw ShapeError("GPT.forward: source length S=" + std::to_string(S) +
                     " exceeds model.block_size=" + std::to_string(config_.block_size));
  check_token_ids(source, config_.vocab_size, "GPT.forward (source)");
  ctx.key_padding = padding_bias(source, config_.n_head, config_.dtype);
  const std::int64_t L = config_.encoder_layers();
  if (options.collect_stats) result.encoder_stats.resize(static_cast<std::size_t>(L));
  if (options.inspect) result.encoder_inspection.resize(static_cast<std::size_t>(L));
  Tensor x = embed(source, 0);
  for (std::size_t i = 0; i < encoder->blocks->size(); ++i) {
    ctx.stats = options.collect_stats ? &result.encoder_stats[i] : nullptr;
    ctx.inspect = nullptr;
    if (options.inspect) {
      ctx.inspect = &result.encoder_inspection[i];
      ctx.inspect->heads = config_.n_head;
      ctx.inspect->tokens = S;
    }
    x = (*encoder->blocks)[i].forward(x, ctx);
    if (options.collect_stats) result.encoder_stats[i].act_max = max_abs(x);
  }
  ctx.stats = nullptr;
  ctx.inspect = nullptr;
  return encoder->ln_f->forward(x);
}

ForwardResult GPT::forward(const Tensor& idx, const Tensor& targets, const ForwardOptions& options) {
  if (!idx.defined()) throw ValueError("GPT.forward: idx is undefined");
  if (idx.dtype() != DType::i32) throw DTypeError("GPT.forward: idx must be i32 token ids, got " + idx.str());
  if (idx.dim() != 2 || idx.size(0) == 0 || idx.size(1) == 0)
    throw ShapeError("GPT.forward: idx must be a non-empty [B, T], got " + shape_str(idx.shape()));
  const std::int64_t T = idx.size(1);
  if (T > config_.block_size)
    throw ShapeError("GPT.forward: sequence length T=" + std::to_string(T) + " exceeds model.block_size=" +
                     std::to_string(config_.block_size) + " (idx " + shape_str(idx.shape()) + ")");
  check_token_ids(idx, config_.vocab_size, "GPT.forward");
  if (targets.defined()) {
    if (targets.dtype() != DType::i32) throw DTypeError("GPT.forward: targets must be i32, got " + targets.str());
    if (targets.shape() != idx.shape())
      throw ShapeError("GPT.forward: targets " + shape_str(targets.shape()) + " must match idx " +
                       shape_str(idx.shape()));
  }

  // Inspection recomputes the attention weights outside the forward: gumbel noise would differ.
  if (options.inspect && is_training()) throw ValueError("GPT.forward: inspect needs eval mode (model.eval())");
  if (encoder && !options.source.defined())
    throw ValueError("GPT.forward: an encoder_decoder model needs the source (ForwardOptions::source)");
  if (!encoder && options.source.defined())
    throw ValueError("GPT.forward: a source was given, but model.arch is " + config_.arch + " (no encoder)");
  if (encoder && options.source.dim() >= 1 && options.source.size(0) != idx.size(0))
    throw ShapeError("GPT.forward: source " + shape_str(options.source.shape()) + " and idx " + shape_str(idx.shape()) +
                     " differ in batch size");

  ForwardResult result;
  AttentionContext ctx;
  ctx.training = is_training();
  ctx.noise = options.noise ? options.noise : &noise_;
  ctx.step = step_;
  ctx.collect_stats = options.collect_stats;
  ctx.wanted = options.regularizers;
  const Tensor memory = encoder ? encode(options.source, ctx, options, result) : Tensor();
  Tensor x = embed(idx, 0);
  const auto L = static_cast<std::size_t>(config_.n_layer);
  if (options.collect_stats) result.stats.resize(L);
  if (options.inspect) result.inspection.resize(L);
  if (encoder && options.collect_stats) result.cross_stats.resize(L);
  if (encoder && options.inspect) result.cross_inspection.resize(L);
  for (std::size_t i = 0; i < blocks->size(); ++i) {
    ctx.stats = options.collect_stats ? &result.stats[i] : nullptr;
    ctx.cross_stats = encoder && options.collect_stats ? &result.cross_stats[i] : nullptr;
    if (options.inspect) {
      ctx.inspect = &result.inspection[i];
      ctx.inspect->heads = config_.n_head;
      ctx.inspect->tokens = T;
      if (encoder) {
        ctx.cross_inspect = &result.cross_inspection[i];
        ctx.cross_inspect->heads = config_.n_head;
        ctx.cross_inspect->tokens = T;
      }
    }
    x = (*blocks)[i].forward(x, ctx, memory);
    if (options.collect_stats) result.stats[i].act_max = max_abs(x);
  }
  x = ln_f->forward(x);
  result.logits = head(x);
  if (targets.defined()) result.loss = ops::cross_entropy(result.logits, targets);

  // A counted regulariser is a mean over everything the layers counted (all gate values, all
  // attention rows of the model); an uncounted one is the sum of the layers' losses.
  for (const auto& [name, r] : ctx.regularizers) {
    if (!r.sum.defined()) continue;
    result.regularizers[name] = r.count > 0 ? ops::mul_scalar(r.sum, 1.0 / r.count) : r.sum;
  }
  return result;
}

Tensor ForwardResult::regularizer(const std::string& name) const {
  auto it = regularizers.find(name);
  return it == regularizers.end() ? Tensor() : it->second;
}

Tensor GPT::forward_cached(const Tensor& idx, KVCache& cache) { return forward_cached(idx, cache, cache.position()); }

Tensor GPT::forward_cached(const Tensor& idx, KVCache& cache, std::int64_t position) {
  if (!idx.defined() || idx.dtype() != DType::i32 || idx.dim() != 2 || idx.numel() == 0)
    throw ShapeError("GPT.forward_cached: idx must be non-empty i32 [B, n], got " +
                     (idx.defined() ? idx.str() : std::string("undefined")));
  const std::int64_t B = idx.size(0), n = idx.size(1);
  if (B != cache.batch() || cache.capacity() != KVCache::capacity_for(config_, cache.options()) ||
      cache.layers.size() != static_cast<std::size_t>(config_.n_layer))
    throw ShapeError("GPT.forward_cached: the cache was made for another batch or model (batch " +
                     std::to_string(cache.batch()) + ", idx " + shape_str(idx.shape()) + ")");
  // Learned positions end with the table; rotary ones and none go on (as far as i32 positions reach).
  const std::int64_t last_position =
      config_.learned_positions() ? config_.block_size - 1 : std::numeric_limits<std::int32_t>::max();
  if (position < 0 || position + n - 1 > last_position)
    throw ShapeError("GPT.forward_cached: positions " + std::to_string(position) + " … " +
                     std::to_string(position + n - 1) + " are outside 0 … " + std::to_string(last_position) +
                     " (model.position " + config_.position +
                     ", model.block_size=" + std::to_string(config_.block_size) + ")");
  if (position != cache.position()) {
    if (cache.length() != 0)
      throw ShapeError("GPT.forward_cached: the cache holds positions up to " + std::to_string(cache.position() - 1) +
                       "; the next must be " + std::to_string(cache.position()) + ", got " + std::to_string(position));
    cache.start_at(position);
  }
  check_token_ids(idx, config_.vocab_size, "GPT.forward_cached");
  if (encoder && cache.cross.size() != blocks->size())
    throw ValueError("GPT.forward_cached: an encoder_decoder model decodes against a source: call encode_source first");
  NoGradGuard no_grad;
  make_room(cache, n);  // under a KV budget: evict what the new positions displace
  Tensor x = embed(idx, position);
  CachedStep at;
  at.row = cache.length();
  at.position = position;
  at.step = step_;
  at.options = cache.options().exact() ? nullptr : &cache.options();
  at.counters = &cache.counters;
  for (std::size_t i = 0; i < blocks->size(); ++i)
    x = (*blocks)[i].forward_cached(x, cache.layers[i], at, encoder ? &cache.cross[i] : nullptr);
  cache.advance(n);
  return head(ln_f->forward(x));
}

void GPT::encode_source(const Tensor& source, KVCache& cache) {
  if (!encoder) throw ValueError("GPT.encode_source: model.arch is " + config_.arch + " (no encoder)");
  if (!source.defined() || source.dim() != 2 || source.size(0) != cache.batch())
    throw ShapeError("GPT.encode_source: the source must be i32 [B, S] with B = the cache's batch " +
                     std::to_string(cache.batch()) + ", got " +
                     (source.defined() ? source.str() : std::string("undefined")));
  NoGradGuard no_grad;
  AttentionContext ctx;  // eval-mode math, nothing reported
  ctx.step = step_;
  ForwardResult unused;
  const Tensor memory = encode(source, ctx, ForwardOptions{}, unused);
  cache.clear();
  cache.cross.clear();
  for (std::size_t i = 0; i < blocks->size(); ++i) cache.cross.push_back((*blocks)[i].cross->prepare(memory, ctx));
}

double GPT::flops_per_token(std::int64_t T) const {
  if (T <= 0) throw ValueError("GPT.flops_per_token: sequence length must be > 0, got " + std::to_string(T));
  const auto V = static_cast<double>(config_.vocab_size), C = static_cast<double>(config_.n_embd);
  const auto Td = static_cast<double>(T);
  // Average visible keys per query for a span w: T/2 for full causal, w − w²/(2T) for a window
  // (w keys once past the first w queries), continuous in w at w = T.
  const std::function<double(std::int64_t)> mean_keys = [&](std::int64_t w) {
    if (w == 0 || w >= T) return Td / 2;
    const auto wd = static_cast<double>(w);
    return wd - wd * wd / (2 * Td);
  };
  // Per block: qkv C·(H + 2·H_kv)·d, attn.proj H·d·C, the MLP 2·C·F (gelu) or 3·C·F (swiglu, glu) — 12C²
  // for GPT-2's (d = C/H, H_kv = H, F = 4C).
  const auto Hd = static_cast<double>(config_.attention_width());
  const auto KVd = static_cast<double>(config_.kv_heads() * config_.head_dim());
  const auto F = static_cast<double>(config_.mlp_width());
  const double block_matmul = C * (Hd + 2 * KVd) + Hd * C + (config_.gated_mlp() ? 3 : 2) * C * F;
  double n_matmul = V * C;  // the head (tied or not, the same product)
  double attention = 0;
  for (std::int64_t l = 0; l < config_.n_layer; ++l) {
    n_matmul += block_matmul;
    double keys = mean_keys(0);  // one causal attention call, unless a gate mixes several
    for (const GateConfig& g : config_.layer_gates(l)) {
      const GateKindSpec& kind = gate_kind(g.kind);
      n_matmul += kind.multiply_adds(config_, g);
      if (kind.attention_keys) keys = kind.attention_keys(g, T, mean_keys);
    }
    // QKᵀ and AV: 2 products × 2 FLOPs × keys × H·d forward, ×3 with backward.
    attention += 12 * Hd * keys;
  }
  // An encoder–decoder, counted per target token with a source as long as the target (S = T): each
  // encoder block is a block with every key visible, each decoder block adds cross.q, cross.kv and
  // cross.proj (4C²) and attends to all S keys.
  for (std::int64_t l = 0; l < config_.encoder_layers(); ++l) {
    n_matmul += block_matmul;
    for (const GateConfig& g : config_.layer_gates(l, kSiteEncoder))
      n_matmul += gate_kind(g.kind).multiply_adds(config_, g);
    attention += 12 * Hd * Td;
  }
  if (encoder)
    for (std::int64_t l = 0; l < config_.n_layer; ++l) {
      n_matmul += C * (Hd + 2 * KVd) + Hd * C;  // cross.q, cross.kv, cross.proj
      for (const GateConfig& g : config_.layer_gates(l, kSiteCross))
        n_matmul += gate_kind(g.kind).multiply_adds(config_, g);
      attention += 12 * Hd * Td;
    }
  return 6 * n_matmul + attention;
}

}  // namespace gattn::models
