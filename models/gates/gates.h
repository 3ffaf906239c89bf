// The gate kinds of SPEC §4, one class per kind (one .cpp each in this folder), plus the pieces
// they share: parameter initialisation and the attention call that reports stats and entropy.
#pragma once
#include <memory>
#include <vector>

#include "framework/nn/layers.h"
#include "framework/tensor/random.h"
#include "models/attention.h"
#include "models/config.h"
#include "ops/attention.h"
#include "ops/cached_attention.h"

namespace gattn::models {

// A gate weight: normal(0, 0.02) or zero per model.gate.init_weight (draws from init either way,
// so the generator advances the same for both choices).
Tensor init_gate_weight(const Shape& shape, const ModelConfig& config, Generator& init);
// A gate bias filled with model.gate.init_bias (resolved to the kind's default).
Tensor init_gate_bias(const Shape& shape, const ModelConfig& config);

// ops::flash_attention on the layer's q, k, v with the given gate terms, asking for what the
// context wants: AttentionStats into ctx.stats->attention (and the pair gate's moments into
// ctx.stats->gate), the differentiable row entropy summed into ctx.attn_entropy_sum.
ops::AttentionResult run_attention(const AttentionInputs& in, const ops::AttentionTerms& terms, AttentionContext& ctx,
                                   ops::AttentionOptions options = {});

// ops::cached_attention of the new queries in.q (positions pos … pos+n−1) over the layer cache, with
// the gate terms already set in `terms` (q, k, v and length are filled in here).
Tensor run_cached_attention(const AttentionInputs& in, const LayerKVCache& cache, std::int64_t pos,
                            ops::CachedAttentionInputs terms = {});

// `none`: plain causal attention, no parameters.
class NoGate : public AttentionGate {
 public:
  Tensor attend(const AttentionInputs& in, AttentionContext& ctx) override;
  Tensor attend_cached(const AttentionInputs& in, LayerKVCache& cache, std::int64_t pos) override;
};

// `output`: y_n ← y_n ⊙ σ(h·Wᵀ + b)_n after SDPA (elementwise: d values per head; headwise: one).
class OutputGate : public AttentionGate {
 public:
  OutputGate(const ModelConfig& config, Generator& init);
  Tensor attend(const AttentionInputs& in, AttentionContext& ctx) override;
  Tensor attend_cached(const AttentionInputs& in, LayerKVCache& cache, std::int64_t pos) override;
  Tensor weight, bias;  // [H·d or H, C], [H·d or H]

 private:
  // y ⊙ σ(h·Wᵀ + b) for the heads-merged attention output y [B, T, C].
  Tensor gated(const Tensor& y, const Tensor& h, AttentionContext& ctx);
  GateConfig gate_;
  std::int64_t n_head_, head_dim_;
  bool headwise_;
};

// `score`: S_ij += log σ(f_jn), f = h·Wᵀ + b: a learned soft mask on keys.
class ScoreGate : public AttentionGate {
 public:
  ScoreGate(const ModelConfig& config, Generator& init);
  Tensor attend(const AttentionInputs& in, AttentionContext& ctx) override;
  Tensor attend_cached(const AttentionInputs& in, LayerKVCache& cache, std::int64_t pos) override;
  Tensor weight, bias;  // [H, C], [H]

 private:
  GateConfig gate_;
};

// `forget`: S_ij += c_i − c_j with c_i = Σ_{l≤i} log σ(f_ln) (Forgetting Transformer).
class ForgetGate : public AttentionGate {
 public:
  ForgetGate(const ModelConfig& config, Generator& init);
  Tensor attend(const AttentionInputs& in, AttentionContext& ctx) override;
  Tensor attend_cached(const AttentionInputs& in, LayerKVCache& cache, std::int64_t pos) override;
  Tensor weight, bias;  // [H, C], [H]

 private:
  GateConfig gate_;
};

// `pair`: P ← P ⊙ (α·G + 1 − α), G_ij = σ(q_i·wq_n + k_j·wk_n + b_n), α = σ(alpha); computed inside
// the fused op, which never stores a T×T matrix.
class PairGate : public AttentionGate {
 public:
  PairGate(const ModelConfig& config, Generator& init);
  Tensor attend(const AttentionInputs& in, AttentionContext& ctx) override;
  Tensor attend_cached(const AttentionInputs& in, LayerKVCache& cache, std::int64_t pos) override;
  Tensor wq, wk, bias, alpha;  // [H, d], [H, d], [H], [1]

 private:
  Tensor row_term(const Tensor& q) const;  // a_i = q_i·wq_n + b_n, [B, H, T]
  Tensor col_term(const Tensor& k) const;  // c_j = k_j·wk_n, [B, H, T]
  GateConfig gate_;
  std::int64_t n_head_, head_dim_;
};

// `context`: g = σ([q_n ; y_n]·Wᵀ + b), y_n ← g ⊙ y_n + (1 − g) ⊙ q_n, W shared by the heads.
class ContextGate : public AttentionGate {
 public:
  ContextGate(const ModelConfig& config, Generator& init);
  Tensor attend(const AttentionInputs& in, AttentionContext& ctx) override;
  Tensor attend_cached(const AttentionInputs& in, LayerKVCache& cache, std::int64_t pos) override;
  Tensor weight, bias;  // [d, 2d], [d]

 private:
  // q + g ⊙ (y − q) with g from [q; y], per head ([B, H, T, d] in), heads merged out.
  Tensor mixed(const Tensor& q, const Tensor& y, AttentionContext& ctx);
  GateConfig gate_;
};

// `routed`: attention experts with different spans sharing q, k, v, mixed per token by a top-k
// renormalised softmax router; the Switch load-balance loss.
class RoutedGate : public AttentionGate {
 public:
  RoutedGate(const ModelConfig& config, Generator& init);
  Tensor attend(const AttentionInputs& in, AttentionContext& ctx) override;
  Tensor attend_cached(const AttentionInputs& in, LayerKVCache& cache, std::int64_t pos) override;
  const char* registered_name() const override { return "router"; }
  std::shared_ptr<nn::Module> registered_module(const std::shared_ptr<AttentionGate>&) override { return router; }
  std::shared_ptr<nn::Linear> router;  // [E, C] + [E]

 private:
  GateConfig gate_;
};

}  // namespace gattn::models
