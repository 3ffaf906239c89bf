// The gate activation, the shared options on its values, the reporting of gate values and the gate
// parameters' initialisation.
#include "models/gating/activation.h"

#include <algorithm>
#include <cmath>

#include "models/inspection.h"
#include "models/regularizers.h"
#include "ops/elementwise.h"
#include "ops/nn_functional.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "ops/unary.h"

namespace gattn::models {

namespace {

// log of a closed hard gate: e^−30 ≈ 1e−13 of an open key's weight, finite so that a prefix sum of
// closed forget gates stays in range and an all-closed row of keys keeps a defined softmax.
constexpr double kClosedLog = -30.0;

// Below −K, log softplus(u) is u − eᵘ/2 to within 5e^(−2K)/24 (≈ 9e−19 at K = 20: under f64's
// rounding of u there).
constexpr double kLogSoftplusTail = 20.0;

// 1 where a gate connection is kept, 0 where dropout replaces it by 1: exact 0/1 values from the
// model's noise stream (the inverted dropout of ones is 1/(1−p) or 0).
Tensor kept_mask(const Tensor& like, double p, const AttentionContext& ctx) {
  if (!ctx.noise) throw ValueError("gate dropout needs a noise generator while training (AttentionContext.noise)");
  Tensor ones = Tensor::ones(like.shape(), like.dtype(), like.device());
  return ops::heaviside(ops::dropout(ones, p, *ctx.noise, true));
}

}  // namespace

Tensor log_softplus(const Tensor& u) {
  // a = max(u, −K) for the exact branch (softplus(a) ≥ softplus(−K) ≈ 2e−9, so its log and the
  // gradient σ(a)/softplus(a) stay finite); b = min(u + K, 0) ≤ 0 for the tail. With t = eᵘ = e^(−K)·eᵇ:
  //   log softplus(u) ≈ log softplus(−K) + (u + K) − (t − e^(−K))/2 = log softplus(a) + b − e^(−K)(eᵇ − 1)/2,
  // which is exactly log softplus(u) where b = 0 (u ≥ −K).
  // b = s − relu(s) with s = u + K, so at u = −K exactly (where relu' is 0) the gradient is the
  // tail's, not 0 from both branches.
  const double K = kLogSoftplusTail;
  const Tensor shifted = ops::add_scalar(u, K), above = ops::relu(shifted);
  const Tensor a = ops::add_scalar(above, -K);
  const Tensor b = shifted - above;
  const Tensor head = ops::log(ops::neg(ops::log_sigmoid(ops::neg(a))));  // log softplus(a), softplus = −log σ(−a)
  const Tensor tail = b - ops::mul_scalar(ops::add_scalar(ops::exp(b), -1.0), 0.5 * std::exp(-K));
  return head + tail;
}

bool is_sigmoid_family(const std::string& activation) {
  return activation == "sigmoid" || activation == "gumbel_sigmoid";
}

bool gate_noise_active(const GateConfig& gate, const AttentionContext& ctx) {
  return gate.activation == "gumbel_sigmoid" && ctx.training;
}

Tensor activation_input(const Tensor& z, const GateConfig& gate, const GateOptions& options,
                        const AttentionContext& ctx) {
  Tensor u = z;
  if (gate_noise_active(gate, ctx)) {
    if (!ctx.noise)
      throw ValueError(gate.where +
                       ".activation: gumbel_sigmoid needs a noise generator while training (AttentionContext.noise)");
    // Drawn on the host (the Philox stream of the CPU), then placed beside z.
    Tensor noise = Tensor::empty(z.shape(), z.dtype());
    ctx.noise->logistic_(noise);
    u = z + noise.to(z.device());
  }
  const double tau = options.temperature_at(ctx.step);
  if (tau != 1.0) u = ops::mul_scalar(u, 1.0 / tau);
  return u;
}

GateActivation activate_gate(const Tensor& z, const GateConfig& gate, const GateOptions& options,
                             const AttentionContext& ctx, const Tensor& z_magnitude) {
  GateActivation out;
  const Tensor u = activation_input(z, gate, options, ctx);
  const double tau = options.temperature_at(ctx.step);
  if (is_sigmoid_family(gate.activation)) {
    out.logit = u;
    out.value = ops::sigmoid(u);
  } else if (gate.activation == "softplus") {
    out.softplus_input = u;
    out.value = ops::neg(ops::log_sigmoid(ops::neg(u)));  // softplus(u) = −log σ(−u), stable both ways
  } else if (gate.activation == "tanh_magnitude") {
    if (!z_magnitude.defined())
      throw ValueError(gate.where + ".activation: tanh_magnitude needs the gate's magnitude projection");
    Tensor v = tau != 1.0 ? ops::mul_scalar(z_magnitude, 1.0 / tau) : z_magnitude;
    out.value = ops::tanh(u) * ops::sigmoid(v);
  } else {
    throw ValueError(gate.where + ".activation: unknown activation '" + gate.activation + "'");
  }
  return out;
}

GateEffect value_effect(const GateActivation& g, const GateOptions& options, const AttentionContext& ctx) {
  GateEffect e;
  e.soft = g;
  Tensor v = g.value;
  if (options.hard) {
    const Tensor soft = g.value.detach();
    // Forward exactly 1[g > θ] (g − stop_gradient(g) is 0); backward the soft gate's gradient.
    v = ops::heaviside(ops::add_scalar(soft, -options.hard_threshold)) + (v - soft);
  }
  if (options.dropout > 0 && ctx.training) {
    const Tensor kept = kept_mask(v, options.dropout, ctx);
    v = v * kept + ops::add_scalar(ops::neg(kept), 1.0);
  }
  const double r = options.ramp_at(ctx.step);
  if (r != 1.0) v = ops::add_scalar(ops::mul_scalar(v, r), 1.0 - r);
  e.value = v;
  e.reported = v.detach();
  return e;
}

GateEffect log_effect(const GateActivation& g, const GateOptions& options, const AttentionContext& ctx) {
  if (!g.logit.defined() && !g.softplus_input.defined())
    throw ValueError("a gate on the logits needs a sigmoid-family or softplus activation");
  GateEffect e;
  e.soft = g;
  const double r = options.ramp_at(ctx.step);
  // log(1 − r + r·g); exactly log σ(u) (log softplus(u)) when the ramp is over. softplus's g may
  // exceed 1, so 1 − r + r·g > 0 still holds: the ramp's log is defined for both.
  Tensor l = r != 1.0            ? ops::log(ops::add_scalar(ops::mul_scalar(g.value, r), 1.0 - r))
             : g.logit.defined() ? ops::log_sigmoid(g.logit)
                                 : log_softplus(g.softplus_input);
  if (options.hard) {
    // Forward: 0 where open, max(log(1 − r), −30) where closed; backward: the soft term's gradient.
    const double closed = r >= 1.0 ? kClosedLog : std::max(std::log1p(-r), kClosedLog);
    const Tensor open = ops::heaviside(ops::add_scalar(g.value.detach(), -options.hard_threshold));
    const Tensor hard_log = ops::mul_scalar(ops::add_scalar(ops::neg(open), 1.0), closed);
    l = hard_log + (l - l.detach());
  }
  if (options.dropout > 0 && ctx.training) l = l * kept_mask(l, options.dropout, ctx);  // dropped: log 1 = 0
  e.log_value = l;
  // The plain gate reports σ(u) itself (bitwise today's statistics); with options, exp of the term.
  e.reported = options.plain_effect() ? g.value.detach() : ops::exp(l.detach());
  return e;
}

void report_gate(const GateEffect& effect, AttentionContext& ctx, const GateLayout& layout) {
  if (ctx.collect_stats && ctx.stats) {
    add_gate_moments(ctx.stats->gate, effect.reported);
    if (layout.unit_axis >= 0 && layout.units) {
      const HeadUnits& u = *layout.units;
      std::vector<ops::GateMoments>& by_head = ctx.stats->gate_by_head;
      if (by_head.empty()) by_head.resize(static_cast<std::size_t>(u.n_head));
      for (std::int64_t unit = 0; unit < u.units; ++unit) {
        ops::GateMoments m;
        add_gate_moments(m, ops::slice(effect.reported, layout.unit_axis, unit, unit + 1));
        for (std::int64_t h : u.heads_of_unit[static_cast<std::size_t>(unit)])
          by_head[static_cast<std::size_t>(h)].merge(m);
      }
    }
  }
  if (ctx.inspect) inspect_gate_values(effect.reported, layout.token_axis, *ctx.inspect, !ctx.reporting_keys);
  if (ctx.wants(kGateEntropy) && effect.soft.logit.defined())
    ctx.add_regularizer(kGateEntropy, ops::sum(binary_entropy_from_logit(effect.soft.logit)),
                        static_cast<double>(effect.soft.logit.numel()));
  if (ctx.wants(kGateL1))
    ctx.add_regularizer(kGateL1, ops::sum(effect.soft.value), static_cast<double>(effect.soft.value.numel()));
}

Tensor init_gate_weight(const Shape& shape, const ModelConfig& model, const GateConfig& gate, Generator& init) {
  Tensor w = Tensor::empty(shape, model.dtype);
  init.normal_(w, 0.0, gate.init_std);  // drawn even for zero weights: the stream's position stays put
  if (gate.init_weight == "zero") w.fill(0.0);
  return w;
}

Tensor init_gate_bias(const Shape& shape, const ModelConfig& model, const GateConfig& gate) {
  return Tensor::full(shape, gate.resolved_init_bias(), model.dtype);
}

Tensor gate_input_norm(const Tensor& x, const GateOptions& options) {
  return options.input_norm ? ops::layer_norm(x, Tensor(), Tensor(), 1e-5) : x;
}

void add_cache_rows(Tensor& slot, const LayerKVCache& cache, const Tensor& src, std::int64_t pos) {
  Tensor& dst = cache_term(slot, cache);
  const std::int64_t n = src.size(2);
  Tensor sum = ops::slice(dst, 2, pos, pos + n) + src;
  write_cache_rows(dst, sum, pos);
}

}  // namespace gattn::models
