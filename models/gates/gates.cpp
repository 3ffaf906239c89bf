// The gate factory and what the gate kinds share: parameter initialisation and the attention call
// that reports statistics and the attention-entropy regulariser.
#include "models/gates/gates.h"

#include "models/inspection.h"
#include "models/regularizers.h"
#include "ops/reduce.h"

namespace gattn::models {

Tensor init_gate_weight(const Shape& shape, const ModelConfig& config, Generator& init) {
  Tensor w = Tensor::empty(shape, config.dtype);
  init.normal_(w, 0.0, 0.02);
  if (config.gate.init_weight == "zero") w.fill(0.0);
  return w;
}

Tensor init_gate_bias(const Shape& shape, const ModelConfig& config) {
  return Tensor::full(shape, config.gate.resolved_init_bias(), config.dtype);
}

ops::AttentionResult run_attention(const AttentionInputs& in, const ops::AttentionTerms& terms, AttentionContext& ctx,
                                   ops::AttentionOptions options) {
  ops::AttentionStats stats;
  const bool collect = ctx.collect_stats && ctx.stats;
  options.stats = collect ? &stats : nullptr;
  options.entropy_output = options.entropy_output || ctx.attn_entropy;
  ops::AttentionResult r = ops::flash_attention(in.q, in.k, in.v, terms, options);
  if (collect) {
    ctx.stats->attention.merge(stats);
    ctx.stats->gate.merge(stats.modulation);  // empty unless the modulation terms were given
  }
  if (ctx.attn_entropy) {
    accumulate(ctx.attn_entropy_sum, ops::sum(r.row_entropy));
    ctx.attn_entropy_count += static_cast<double>(r.row_entropy.numel());
  }
  if (ctx.inspect) {
    ctx.inspect->attention = attention_weights(in.q, in.k, terms, options.window);
    if (terms.modulation_row.defined()) inspect_pair_gate(terms, *ctx.inspect);
  }
  return r;
}

std::shared_ptr<AttentionGate> make_gate(const ModelConfig& config, Generator& init) {
  switch (config.gate.kind) {
    case GateKind::none:
      return std::make_shared<NoGate>();
    case GateKind::output:
      return std::make_shared<OutputGate>(config, init);
    case GateKind::score:
      return std::make_shared<ScoreGate>(config, init);
    case GateKind::forget:
      return std::make_shared<ForgetGate>(config, init);
    case GateKind::pair:
      return std::make_shared<PairGate>(config, init);
    case GateKind::context:
      return std::make_shared<ContextGate>(config, init);
    case GateKind::routed:
      return std::make_shared<RoutedGate>(config, init);
  }
  throw ValueError("model.gate.kind: unknown gate kind");
}

Tensor run_cached_attention(const AttentionInputs& in, const LayerKVCache& cache, std::int64_t pos,
                            ops::CachedAttentionInputs terms) {
  terms.q = in.q;
  terms.k = cache.k;
  terms.v = cache.v;
  terms.length = pos + in.q.size(2);
  return ops::cached_attention(terms);
}

}  // namespace gattn::models
