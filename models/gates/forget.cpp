// Gate kind `forget` (Forgetting Transformer, Lin et al. 2025): S_ij += c_i − c_j with
// c_i = Σ_{l≤i} log σ(f_ln), so key j is down-weighted by the forget gates between j and i.
#include "models/gates/activation.h"
#include "models/gates/gates.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/scan.h"
#include "ops/shape.h"
#include "ops/unary.h"

namespace gattn::models {

ForgetGate::ForgetGate(const ModelConfig& config, Generator& init) : gate_(config.gate) {
  weight = register_parameter("weight", init_gate_weight({config.n_head, config.n_embd}, config, init));
  bias = register_parameter("bias", init_gate_bias({config.n_head}, config));
}

Tensor ForgetGate::attend(const AttentionInputs& in, AttentionContext& ctx) {
  GateActivation g = activate_gate(ops::linear(in.h, weight, bias), gate_, ctx);  // [B, T, H]
  report_gate(g, ctx);
  ops::AttentionTerms terms;
  // The op takes the prefix sums c as a row and a column bias and forms c_i − c_j itself: O(T)
  // memory, no T×T decay matrix.
  const Tensor cum = ops::cumsum(ops::transpose(ops::log_sigmoid(g.logit), 1, 2), 2);  // [B, H, T]
  terms.row_bias = cum;
  terms.col_bias = ops::neg(cum);
  return merge_heads(run_attention(in, terms, ctx).out);
}


Tensor ForgetGate::attend_cached(const AttentionInputs& in, LayerKVCache& cache, std::int64_t pos) {
  AttentionContext eval;
  GateActivation g = activate_gate(ops::linear(in.h, weight, bias), gate_, eval);  // [B, n, H]
  Tensor cum = ops::cumsum(ops::transpose(ops::log_sigmoid(g.logit), 1, 2), 2);     // [B, H, n]
  Tensor& cached = cache_term(cache.prefix_sum, cache);
  // The prefix sums continue from the last cached position's c.
  if (pos > 0) cum = cum + ops::slice(cached, 2, pos - 1, pos);
  write_cache_rows(cached, cum, pos);
  write_cache_rows(cache_term(cache.col_bias, cache), ops::neg(cum), pos);
  ops::CachedAttentionInputs terms;
  terms.row_bias = cum;  // the new queries' c_i
  terms.col_bias = cache.col_bias;
  return merge_heads(run_cached_attention(in, cache, pos, terms));
}

}  // namespace gattn::models
