// Gate kind `score` (seed 000, paradigm 1): S_ij += log σ(f_jn), a learned soft mask on keys that
// the fused op adds to the logits as a per-key bias.
#include "models/gates/activation.h"
#include "models/gates/gates.h"
#include "ops/matmul.h"
#include "ops/shape.h"
#include "ops/unary.h"

namespace gattn::models {

ScoreGate::ScoreGate(const ModelConfig& config, Generator& init) : gate_(config.gate) {
  weight = register_parameter("weight", init_gate_weight({config.n_head, config.n_embd}, config, init));
  bias = register_parameter("bias", init_gate_bias({config.n_head}, config));
}

Tensor ScoreGate::attend(const AttentionInputs& in, AttentionContext& ctx) {
  GateActivation g = activate_gate(ops::linear(in.h, weight, bias), gate_, ctx);  // [B, T, H]
  report_gate(g, ctx);
  ops::AttentionTerms terms;
  // log σ(u) from the logit (exact where σ(u) would round to 0).
  terms.col_bias = ops::transpose(ops::log_sigmoid(g.logit), 1, 2);  // [B, H, T]
  return merge_heads(run_attention(in, terms, ctx).out);
}


Tensor ScoreGate::attend_cached(const AttentionInputs& in, LayerKVCache& cache, std::int64_t pos) {
  AttentionContext eval;
  GateActivation g = activate_gate(ops::linear(in.h, weight, bias), gate_, eval);  // [B, n, H]
  write_cache_rows(cache_term(cache.col_bias, cache), ops::transpose(ops::log_sigmoid(g.logit), 1, 2), pos);
  ops::CachedAttentionInputs terms;
  terms.col_bias = cache.col_bias;
  return merge_heads(run_cached_attention(in, cache, pos, terms));
}

}  // namespace gattn::models
