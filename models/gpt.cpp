// The GPT: embeddings, pre-LN blocks with gated attention and a GELU MLP, the tied head,
// the loss, the regularisers averaged over the whole model, and the per-layer statistics.
#include "models/gpt.h"

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "framework/autograd/grad_mode.h"
#include "models/gating/registry.h"
#include "models/kv_policy.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/nn_functional.h"
#include "ops/rope.h"
#include "ops/unary.h"

namespace gattn::models {

namespace {

// The container that gives the MLP's layers their documented names, mlp.fc and mlp.proj.
class Mlp : public nn::Module {
 public:
  Mlp(std::shared_ptr<nn::Linear> fc, std::shared_ptr<nn::Linear> proj) {
    register_module("fc", std::move(fc));
    register_module("proj", std::move(proj));
  }
};

constexpr std::uint64_t kInitStream = 0;   // Philox stream of the initialisation
constexpr std::uint64_t kNoiseStream = 1;  // Philox stream of the training noise (gumbel_sigmoid)

}  // namespace

Block::Block(const ModelConfig& config, std::int64_t layer, Generator& init) {
  const std::int64_t C = config.n_embd;
  ln1 = register_module("ln1", std::make_shared<nn::LayerNorm>(C, 1e-5, config.dtype));
  attn = register_module("attn", std::make_shared<GatedAttention>(config, layer, init));
  ln2 = register_module("ln2", std::make_shared<nn::LayerNorm>(C, 1e-5, config.dtype));
  nn::LinearOptions fc_opt;
  fc_opt.dtype = config.dtype;
  nn::LinearOptions proj_opt = fc_opt;
  proj_opt.init_std = 0.02 / std::sqrt(2.0 * static_cast<double>(config.n_layer));  // GPT-2 residual scaling
  fc = std::make_shared<nn::Linear>(C, 4 * C, init, fc_opt);
  proj = std::make_shared<nn::Linear>(4 * C, C, init, proj_opt);
  register_module("mlp", std::make_shared<Mlp>(fc, proj));
}

Tensor Block::forward(const Tensor& x, AttentionContext& ctx) {
  return with_mlp(x + attn->forward(ln1->forward(x), ctx));
}

Tensor Block::forward_cached(const Tensor& x, LayerKVCache& cache, const CachedStep& at) {
  return with_mlp(x + attn->forward_cached(ln1->forward(x), cache, at));
}

Tensor Block::with_mlp(const Tensor& y) {
  // fc and GELU in one op: on the GPU one cuBLASLt GEMM with bias and GELU in its epilogue.
  return y + proj->forward(ops::linear_gelu(ln2->forward(y), fc->weight, fc->bias));
}

namespace {

const ModelConfig& checked(const ModelConfig& config) {
  config.validate();
  if (config.vocab_size <= 0)
    throw ValueError("model.vocab_size: must be set (> 0) to build the model, got " +
                     std::to_string(config.vocab_size));
  return config;
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
  if (!config_.rope())
    wpe = register_module("wpe", std::make_shared<nn::Embedding>(config_.block_size, C, init, 0.02, config_.dtype));
  blocks = register_module("blocks", std::make_shared<nn::ModuleList<Block>>());
  for (std::int64_t i = 0; i < config_.n_layer; ++i) blocks->push_back(std::make_shared<Block>(config_, i, init));
  ln_f = register_module("ln_f", std::make_shared<nn::LayerNorm>(C, 1e-5, config_.dtype));
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
  Tensor x = wte->forward(idx);                                                   // [B, T, C]
  if (wpe) x = x + wpe->forward(Tensor::arange(T, DType::i32).to(idx.device()));  // + [T, C]

  ForwardResult result;
  AttentionContext ctx;
  ctx.training = is_training();
  ctx.noise = &noise_;
  ctx.step = step_;
  ctx.collect_stats = options.collect_stats;
  ctx.wanted = options.regularizers;
  if (options.collect_stats) result.stats.resize(static_cast<std::size_t>(config_.n_layer));
  if (options.inspect) result.inspection.resize(static_cast<std::size_t>(config_.n_layer));
  for (std::size_t i = 0; i < blocks->size(); ++i) {
    ctx.stats = options.collect_stats ? &result.stats[i] : nullptr;
    if (options.inspect) {
      ctx.inspect = &result.inspection[i];
      ctx.inspect->heads = config_.n_head;
      ctx.inspect->tokens = T;
    }
    x = (*blocks)[i].forward(x, ctx);
  }
  x = ln_f->forward(x);
  result.logits = ops::linear(x, wte->weight);  // tied head: logits = x·wteᵀ
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
  // Learned positions end with the table; rotary ones go on (as far as i32 positions reach).
  const std::int64_t last_position = config_.rope() ? std::numeric_limits<std::int32_t>::max() : config_.block_size - 1;
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
  NoGradGuard no_grad;
  make_room(cache, n);  // under a KV budget: evict what the new positions displace
  Tensor x = wte->forward(idx);
  if (wpe) x = x + wpe->forward(ops::position_ids(position, n));
  CachedStep at;
  at.row = cache.length();
  at.position = position;
  at.step = step_;
  at.options = cache.options().exact() ? nullptr : &cache.options();
  at.counters = &cache.counters;
  for (std::size_t i = 0; i < blocks->size(); ++i) x = (*blocks)[i].forward_cached(x, cache.layers[i], at);
  cache.advance(n);
  return ops::linear(ln_f->forward(x), wte->weight);
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
  double n_matmul = V * C;  // the tied head
  double attention = 0;
  for (std::int64_t l = 0; l < config_.n_layer; ++l) {
    n_matmul += 12 * C * C;      // qkv 3C², attn.proj C², mlp.fc 4C², mlp.proj 4C²
    double keys = mean_keys(0);  // one causal attention call, unless a gate mixes several
    for (const GateConfig& g : config_.layer_gates(l)) {
      const GateKindSpec& kind = gate_kind(g.kind);
      n_matmul += kind.multiply_adds(config_, g);
      if (kind.attention_keys) keys = kind.attention_keys(g, T, mean_keys);
    }
    // QKᵀ and AV: 2 products × 2 FLOPs × keys × C forward, ×3 with backward.
    attention += 12 * C * keys;
  }
  return 6 * n_matmul + attention;
}

}  // namespace gattn::models
