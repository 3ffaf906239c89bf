// Regulariser pieces shared by the gates and the GPT: stable binary entropy, running sums, the
// Switch balance loss.
#include "models/regularizers.h"

#include "core/autograd/grad_mode.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "ops/unary.h"

namespace gattn::models {

Tensor binary_entropy_from_logit(const Tensor& u) {
  // σ(u)·log σ(u) + σ(−u)·log σ(−u): log_sigmoid is exact where σ rounds to 0 or 1, and the
  // vanishing factor then multiplies a finite log, so large |u| gives h → 0 with a finite gradient.
  Tensor neg_u = ops::neg(u);
  Tensor terms = ops::sigmoid(u) * ops::log_sigmoid(u) + ops::sigmoid(neg_u) * ops::log_sigmoid(neg_u);
  return ops::neg(terms);
}

void accumulate(Tensor& sum, const Tensor& term) { sum = sum.defined() ? sum + term : term; }

void add_gate_moments(ops::GateMoments& m, const Tensor& g) { m.merge(ops::gate_moments(g)); }

Tensor switch_balance_loss(const Tensor& probs, const Tensor& selected, std::int64_t top_k) {
  const std::int64_t E = probs.size(-1);
  const std::int64_t tokens = probs.numel() / E;
  // f_e: assignments counted from the hard top-k choice, so it carries no gradient (as in Switch).
  Tensor fraction;
  {
    NoGradGuard no_grad;
    Tensor counts = ops::sum(ops::reshape(selected.detach(), {tokens, E}), {0});
    fraction = ops::mul_scalar(counts, 1.0 / static_cast<double>(tokens * top_k));
  }
  Tensor mean_prob = ops::mean(ops::reshape(probs, {tokens, E}), {0});
  return ops::mul_scalar(ops::sum(mean_prob * fraction), static_cast<double>(E));
}

}  // namespace gattn::models
