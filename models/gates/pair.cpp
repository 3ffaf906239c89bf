// Gate kind `pair` (seed 001): a per-(query, key) gate G_ij = σ(a_i + c_j) multiplying the softmax
// weights, mixed in by α = σ(alpha). The model supplies the O(T) row and column terms; the fused op
// forms G tile by tile (with the gumbel noise when training) and never stores a T×T matrix.
#include <cmath>

#include "models/gates/activation.h"
#include "models/gates/gates.h"
#include "models/regularizers.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "ops/unary.h"

namespace gattn::models {

PairGate::PairGate(const ModelConfig& config, Generator& init)
    : gate_(config.gate), n_head_(config.n_head), head_dim_(config.head_dim()) {
  wq = register_parameter("wq", init_gate_weight({n_head_, head_dim_}, config, init));
  wk = register_parameter("wk", init_gate_weight({n_head_, head_dim_}, config, init));
  bias = register_parameter("bias", init_gate_bias({n_head_}, config));
  // α = σ(0) = 1/2: half the attention mass is open to gating at the start.
  alpha = register_parameter("alpha", Tensor::zeros({1}, config.dtype));
}

Tensor PairGate::attend(const AttentionInputs& in, AttentionContext& ctx) {
  const std::int64_t B = in.q.size(0), T = in.q.size(2);
  ops::AttentionTerms terms;
  terms.modulation_row = row_term(in.q);
  terms.modulation_col = col_term(in.k);
  terms.modulation_alpha = ops::sigmoid(alpha);
  terms.modulation_temperature = gate_temperature(gate_);
  if (gate_noise_active(gate_, ctx)) {
    if (!ctx.noise)
      throw ValueError(
          "model.gate.activation: gumbel_sigmoid needs a noise generator while training (AttentionContext.noise)");
    terms.modulation_noise = ctx.noise;
  }
  ops::AttentionOptions options;
  options.modulation_entropy = ctx.gate_entropy;
  ops::AttentionResult r = run_attention(in, terms, ctx, options);  // also merges G's moments into the stats
  if (ctx.gate_entropy) {
    accumulate(ctx.gate_entropy_sum, ops::sum(r.modulation_entropy));
    // One gate value per visible (query, key) pair: j ≤ i.
    ctx.gate_entropy_count += static_cast<double>(B * n_head_) * static_cast<double>(T * (T + 1) / 2);
  }
  return merge_heads(r.out);
}

Tensor PairGate::attend_cached(const AttentionInputs& in, LayerKVCache& cache, std::int64_t pos) {
  write_cache_rows(cache_term(cache.modulation_col, cache), col_term(in.k), pos);
  ops::CachedAttentionInputs terms;
  terms.modulation_row = row_term(in.q);
  terms.modulation_col = cache.modulation_col;
  terms.modulation_alpha = 1.0 / (1.0 + std::exp(-alpha.item()));
  terms.modulation_temperature = gate_temperature(gate_);
  return merge_heads(run_cached_attention(in, cache, pos, terms));
}

// a_i = q_i·wq_n + b_n and c_j = k_j·wk_n per head, on the unscaled q, k: [B, H, T].
Tensor PairGate::row_term(const Tensor& q) const {
  return ops::sum(q * ops::reshape(wq, {1, n_head_, 1, head_dim_}), {3}) + ops::reshape(bias, {1, n_head_, 1});
}

Tensor PairGate::col_term(const Tensor& k) const {
  return ops::sum(k * ops::reshape(wk, {1, n_head_, 1, head_dim_}), {3});
}

}  // namespace gattn::models
