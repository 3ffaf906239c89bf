// Gate kind `output` (Qiu et al. 2025, G1): a sigmoid gate on the SDPA output before attn.proj,
// elementwise (d values per head) or headwise (one per head).
#include "models/gates/activation.h"
#include "models/gates/gates.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/shape.h"

namespace gattn::models {

OutputGate::OutputGate(const ModelConfig& config, Generator& init)
    : gate_(config.gate),
      n_head_(config.n_head),
      head_dim_(config.head_dim()),
      headwise_(config.gate.granularity == "headwise") {
  const std::int64_t out = headwise_ ? n_head_ : n_head_ * head_dim_;
  weight = register_parameter("weight", init_gate_weight({out, config.n_embd}, config, init));
  bias = register_parameter("bias", init_gate_bias({out}, config));
}

Tensor OutputGate::attend(const AttentionInputs& in, AttentionContext& ctx) {
  return gated(merge_heads(run_attention(in, {}, ctx).out), in.h, ctx);
}

Tensor OutputGate::attend_cached(const AttentionInputs& in, LayerKVCache& cache, std::int64_t pos) {
  AttentionContext eval;
  return gated(merge_heads(run_cached_attention(in, cache, pos)), in.h, eval);
}

Tensor OutputGate::gated(const Tensor& y, const Tensor& h, AttentionContext& ctx) {
  GateActivation g = activate_gate(ops::linear(h, weight, bias), gate_, ctx);  // y, h: [B, T, C]
  report_gate(g, ctx);
  if (!headwise_) return y * g.value;
  // One gate per head: broadcast over the head's d columns.
  const std::int64_t B = y.size(0), T = y.size(1);
  Tensor out = ops::reshape(y, {B, T, n_head_, head_dim_}) * ops::reshape(g.value, {B, T, n_head_, 1});
  return ops::reshape(out, {B, T, n_head_ * head_dim_});
}

}  // namespace gattn::models
