// Gate kind `context` (seed 000, paradigm 2): a gate from the head's query and attention output,
// interpolating between them: y_n ← g ⊙ y_n + (1 − g) ⊙ q_n, with W [d, 2d] shared by the heads.
#include "models/gates/activation.h"
#include "models/gates/gates.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/shape.h"

namespace gattn::models {

ContextGate::ContextGate(const ModelConfig& config, Generator& init) : gate_(config.gate) {
  const std::int64_t d = config.head_dim();
  weight = register_parameter("weight", init_gate_weight({d, 2 * d}, config, init));
  bias = register_parameter("bias", init_gate_bias({d}, config));
}

Tensor ContextGate::attend(const AttentionInputs& in, AttentionContext& ctx) {
  return mixed(in.q, run_attention(in, {}, ctx).out, ctx);
}

Tensor ContextGate::attend_cached(const AttentionInputs& in, LayerKVCache& cache, std::int64_t pos) {
  AttentionContext eval;
  return mixed(in.q, run_cached_attention(in, cache, pos), eval);
}

Tensor ContextGate::mixed(const Tensor& q, const Tensor& y, AttentionContext& ctx) {
  GateActivation g = activate_gate(ops::linear(ops::concat({q, y}, 3), weight, bias), gate_, ctx);
  report_gate(g, ctx, 2);  // g: [B, H, T, d]
  // g ⊙ y + (1 − g) ⊙ q written as q + g ⊙ (y − q): one product instead of two.
  return merge_heads(q + g.value * (y - q));
}

}  // namespace gattn::models
