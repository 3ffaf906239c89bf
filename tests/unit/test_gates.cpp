// The gate kinds of SPEC §4: parameter names, shapes and initial values, the math against a naive
// T×T reference, neutral settings that reduce to the baseline, the gumbel activation, statistics,
// the regularisers and the routed gate's top-k and balance loss.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <numeric>

#include "model_test_util.h"
#include "models/attention.h"
#include "models/gpt.h"
#include "models/regularizers.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/nn_functional.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "ops/unary.h"
#include "test_util.h"

namespace gattn {

using models::GateKind;
using models::GPT;
using models::ModelConfig;

namespace {

using ShapeMap = std::map<std::string, Shape>;

// SPEC §4's parameter list for a config, written out from the table.
ShapeMap spec_parameters(const ModelConfig& c) {
  const std::int64_t V = c.vocab_size, T = c.block_size, C = c.n_embd, H = c.n_head, d = c.head_dim();
  const auto E = static_cast<std::int64_t>(c.gate.windows.size());
  ShapeMap m{{"wte.weight", {V, C}}, {"wpe.weight", {T, C}}, {"ln_f.weight", {C}}, {"ln_f.bias", {C}}};
  for (std::int64_t i = 0; i < c.n_layer; ++i) {
    const std::string p = "blocks." + std::to_string(i) + ".";
    m[p + "ln1.weight"] = {C};
    m[p + "ln1.bias"] = {C};
    m[p + "attn.qkv.weight"] = {3 * C, C};
    m[p + "attn.qkv.bias"] = {3 * C};
    m[p + "attn.proj.weight"] = {C, C};
    m[p + "attn.proj.bias"] = {C};
    m[p + "ln2.weight"] = {C};
    m[p + "ln2.bias"] = {C};
    m[p + "mlp.fc.weight"] = {4 * C, C};
    m[p + "mlp.fc.bias"] = {4 * C};
    m[p + "mlp.proj.weight"] = {C, 4 * C};
    m[p + "mlp.proj.bias"] = {C};
    if (!c.gate.applies_to(i)) continue;
    const std::string g = p + "attn.gate.";
    switch (c.gate.kind) {
      case GateKind::none:
        break;
      case GateKind::output: {
        const std::int64_t n = c.gate.granularity == "headwise" ? H : H * d;
        m[g + "weight"] = {n, C};
        m[g + "bias"] = {n};
        break;
      }
      case GateKind::score:
      case GateKind::forget:
        m[g + "weight"] = {H, C};
        m[g + "bias"] = {H};
        break;
      case GateKind::pair:
        m[g + "wq"] = {H, d};
        m[g + "wk"] = {H, d};
        m[g + "bias"] = {H};
        m[g + "alpha"] = {1};
        break;
      case GateKind::context:
        m[g + "weight"] = {d, 2 * d};
        m[g + "bias"] = {d};
        break;
      case GateKind::routed:
        m[p + "attn.router.weight"] = {E, C};
        m[p + "attn.router.bias"] = {E};
        break;
    }
  }
  return m;
}

ShapeMap model_parameters(GPT& model) {
  ShapeMap m;
  for (auto& [name, p] : model.named_parameters()) {
    EXPECT_EQ(m.count(name), 0u) << name << " listed twice";
    m[name] = p.shape();
  }
  return m;
}

// ---- a naive reference of SPEC §4: full T×T scores, masks and gates written out with plain ops ----

Tensor heads(const Tensor& x, std::int64_t H) {  // [B, T, C] -> [B, H, T, d]
  return ops::permute(ops::reshape(x, {x.size(0), x.size(1), H, x.size(2) / H}), {0, 2, 1, 3});
}
Tensor unheads(const Tensor& y) {  // [B, H, T, d] -> [B, T, C]
  return ops::reshape(ops::permute(y, {0, 2, 1, 3}), {y.size(0), y.size(2), y.size(1) * y.size(3)});
}

// 1 where key j is hidden from query i: j > i, or i − j >= window when window > 0.
Tensor hidden_keys(std::int64_t T, std::int64_t window) {
  std::vector<std::int32_t> m(static_cast<std::size_t>(T * T));
  for (std::int64_t i = 0; i < T; ++i)
    for (std::int64_t j = 0; j < T; ++j)
      m[static_cast<std::size_t>(i * T + j)] = j > i || (window > 0 && i - j >= window);
  return Tensor::from_ints(m, {T, T});
}

struct RefGate {
  Tensor key_bias, forget_cum, pair_g, pair_alpha;  // [B,H,T], [B,H,T], [B,H,T,T], [1]
};

Tensor naive_attention(const Tensor& q, const Tensor& k, const Tensor& v, const RefGate& g, std::int64_t window) {
  const std::int64_t T = q.size(2);
  Tensor S = ops::mul_scalar(ops::matmul(q, k, false, true), 1.0 / std::sqrt(static_cast<double>(q.size(3))));
  if (g.key_bias.defined()) S = S + ops::unsqueeze(g.key_bias, 2);
  if (g.forget_cum.defined()) S = S + ops::unsqueeze(g.forget_cum, 3) - ops::unsqueeze(g.forget_cum, 2);
  Tensor P = ops::softmax(ops::masked_fill(S, hidden_keys(T, window), -1e30));
  if (g.pair_g.defined()) P = P * (g.pair_g * g.pair_alpha + (ops::neg(g.pair_alpha) + 1.0));
  return ops::matmul(P, v);
}

Tensor reference_attention(GPT& m, std::int64_t layer, const Tensor& h) {
  const ModelConfig& c = m.config();
  const std::int64_t B = h.size(0), T = h.size(1), C = c.n_embd, H = c.n_head, d = c.head_dim();
  const std::string p = "blocks." + std::to_string(layer) + ".attn.";
  auto P = [&](const std::string& n) { return m.parameter(p + n); };
  Tensor qkv = ops::linear(h, P("qkv.weight"), P("qkv.bias"));
  Tensor q = heads(ops::slice(qkv, 2, 0, C), H), k = heads(ops::slice(qkv, 2, C, 2 * C), H),
         v = heads(ops::slice(qkv, 2, 2 * C, 3 * C), H);
  const GateKind kind = c.gate.applies_to(layer) ? c.gate.kind : GateKind::none;
  // gumbel_sigmoid in eval is σ(z/τ).
  const double inv_tau = c.gate.activation == "gumbel_sigmoid" ? 1.0 / c.gate.temperature : 1.0;
  auto gate_logit = [&](const Tensor& x, const Tensor& w, const Tensor& b) {
    return ops::mul_scalar(ops::linear(x, w, b), inv_tau);
  };
  Tensor y;
  RefGate g;
  switch (kind) {
    case GateKind::none:
      y = unheads(naive_attention(q, k, v, g, 0));
      break;
    case GateKind::output: {
      y = unheads(naive_attention(q, k, v, g, 0));
      Tensor gate = ops::sigmoid(gate_logit(h, P("gate.weight"), P("gate.bias")));
      if (c.gate.granularity == "headwise")
        y = ops::reshape(ops::reshape(y, {B, T, H, d}) * ops::reshape(gate, {B, T, H, 1}), {B, T, C});
      else
        y = y * gate;
      break;
    }
    case GateKind::score:
      g.key_bias = ops::permute(ops::log(ops::sigmoid(gate_logit(h, P("gate.weight"), P("gate.bias")))), {0, 2, 1});
      y = unheads(naive_attention(q, k, v, g, 0));
      break;
    case GateKind::forget: {
      // c = (log σ f) · U with U_li = [l ≤ i]: the prefix sums as a product, not a scan.
      Tensor ls = ops::permute(ops::log(ops::sigmoid(gate_logit(h, P("gate.weight"), P("gate.bias")))), {0, 2, 1});
      std::vector<double> u(static_cast<std::size_t>(T * T));
      for (std::int64_t l = 0; l < T; ++l)
        for (std::int64_t i = 0; i < T; ++i) u[static_cast<std::size_t>(l * T + i)] = l <= i;
      g.forget_cum =
          ops::reshape(ops::matmul(ops::reshape(ls, {B, H, 1, T}), Tensor::from(u, {T, T}, h.dtype())), {B, H, T});
      y = unheads(naive_attention(q, k, v, g, 0));
      break;
    }
    case GateKind::pair: {
      Tensor a = ops::sum(q * ops::reshape(P("gate.wq"), {1, H, 1, d}), {3}) + ops::reshape(P("gate.bias"), {1, H, 1});
      Tensor b = ops::sum(k * ops::reshape(P("gate.wk"), {1, H, 1, d}), {3});
      g.pair_g = ops::sigmoid(ops::mul_scalar(ops::unsqueeze(a, 3) + ops::unsqueeze(b, 2), inv_tau));
      g.pair_alpha = ops::sigmoid(P("gate.alpha"));
      y = unheads(naive_attention(q, k, v, g, 0));
      break;
    }
    case GateKind::context: {
      Tensor yh = naive_attention(q, k, v, g, 0);
      Tensor gate = ops::sigmoid(gate_logit(ops::concat({q, yh}, 3), P("gate.weight"), P("gate.bias")));
      y = unheads(gate * yh + (ops::neg(gate) + 1.0) * q);
      break;
    }
    case GateKind::routed: {
      const auto E = static_cast<std::int64_t>(c.gate.windows.size());
      Tensor z = ops::linear(h, P("router.weight"), P("router.bias"));
      Tensor r = ops::softmax(z);
      std::vector<double> zv = z.to_vector(), mask(zv.size(), 0.0);
      for (std::int64_t t = 0; t < B * T; ++t) {
        std::vector<std::int64_t> order(static_cast<std::size_t>(E));
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](std::int64_t x, std::int64_t w) {
          return zv[static_cast<std::size_t>(t * E + x)] > zv[static_cast<std::size_t>(t * E + w)];
        });
        for (std::int64_t s = 0; s < c.gate.top_k; ++s)
          mask[static_cast<std::size_t>(t * E + order[static_cast<std::size_t>(s)])] = 1;
      }
      Tensor kept = r * Tensor::from(mask, z.shape(), z.dtype());
      Tensor rt = kept / ops::sum(kept, {2}, true);
      Tensor yh;
      for (std::int64_t e = 0; e < E; ++e) {
        Tensor ye = naive_attention(q, k, v, g, c.gate.windows[static_cast<std::size_t>(e)]) *
                    ops::reshape(ops::slice(rt, 2, e, e + 1), {B, 1, T, 1});
        yh = yh.defined() ? yh + ye : ye;
      }
      y = unheads(yh);
      break;
    }
  }
  return ops::linear(y, P("proj.weight"), P("proj.bias"));
}

Tensor reference_logits(GPT& m, const Tensor& idx) {
  const ModelConfig& c = m.config();
  const std::int64_t T = idx.size(1);
  Tensor x =
      ops::embedding(m.parameter("wte.weight"), idx) + ops::embedding(m.parameter("wpe.weight"), Tensor::arange(T));
  for (std::int64_t i = 0; i < c.n_layer; ++i) {
    const std::string p = "blocks." + std::to_string(i) + ".";
    auto P = [&](const std::string& n) { return m.parameter(p + n); };
    x = x + reference_attention(m, i, ops::layer_norm(x, P("ln1.weight"), P("ln1.bias"), 1e-5));
    Tensor h = ops::layer_norm(x, P("ln2.weight"), P("ln2.bias"), 1e-5);
    x = x + ops::linear(ops::gelu(ops::linear(h, P("mlp.fc.weight"), P("mlp.fc.bias"))), P("mlp.proj.weight"),
                        P("mlp.proj.bias"));
  }
  x = ops::layer_norm(x, m.parameter("ln_f.weight"), m.parameter("ln_f.bias"), 1e-5);
  return ops::linear(x, m.parameter("wte.weight"));
}

// Gates pushed away from their neutral start (normal weights, a nonzero bias and alpha) so the
// reference comparison exercises every term.
ModelConfig reference_config(GateKind kind) {
  ModelConfig c = test::tiny_config(kind);
  c.gate.init_bias = 0.7;
  c.gate.windows = {0, 2, 3};
  c.gate.top_k = 2;
  return c;
}

void expect_matches_reference(const ModelConfig& c) {
  GPT model(c, 11);
  test::perturb_gate_parameters(model, 5);
  model.eval();
  Tensor idx = test::tokens(2, 6, c.vocab_size, 3);
  NoGradGuard no_grad;
  EXPECT_TRUE(test::all_close(model.forward(idx).logits, reference_logits(model, idx), 1e-9, 1e-9));
}

// A gated model next to the baseline with the same shared weights.
double neutral_logits_gap(ModelConfig gated, const std::function<void(GPT&)>& adjust = {}) {
  ModelConfig base = gated;
  base.gate.kind = GateKind::none;
  gated.dtype = base.dtype = DType::f32;  // the production dtype: the identities must hold there
  GPT a(base, 1), b(gated, 2);
  test::copy_shared_parameters(a, b);
  if (adjust) adjust(b);
  Tensor idx = test::tokens(3, 6, gated.vocab_size, 9);
  Tensor la = a.forward(idx).logits, lb = b.forward(idx).logits;
  double gap = 0;
  for (std::int64_t i = 0; i < la.numel(); ++i) gap = std::max(gap, std::abs(la.at(i) - lb.at(i)));
  return gap;
}

}  // namespace

// ---------------------------------------------------------------- parameters

TEST(GateParams, NamesAndShapesMatchSpecForEveryKind) {
  for (GateKind kind : test::all_gate_kinds()) {
    ModelConfig c = test::tiny_config(kind);
    GPT model(c, 0);
    EXPECT_EQ(model_parameters(model), spec_parameters(c)) << models::gate_kind_name(kind);
  }
  ModelConfig headwise = test::tiny_config(GateKind::output);
  headwise.gate.granularity = "headwise";
  GPT model(headwise, 0);
  EXPECT_EQ(model_parameters(model), spec_parameters(headwise));
  EXPECT_EQ(model.parameter("blocks.0.attn.gate.weight").shape(), (Shape{2, 4}));
}

TEST(GateParams, ExplicitSpecNamesForEachKind) {
  // Spelled out once more by hand, so a wrong spec_parameters() cannot hide a wrong name.
  auto shape_of = [](GateKind kind, const std::string& name) {
    ModelConfig c = test::tiny_config(kind);
    c.gate.windows = {0, 2, 4};
    GPT model(c, 0);
    return model.parameter(name).shape();
  };
  EXPECT_EQ(shape_of(GateKind::output, "blocks.1.attn.gate.weight"), (Shape{4, 4}));
  EXPECT_EQ(shape_of(GateKind::score, "blocks.0.attn.gate.weight"), (Shape{2, 4}));
  EXPECT_EQ(shape_of(GateKind::forget, "blocks.0.attn.gate.bias"), (Shape{2}));
  EXPECT_EQ(shape_of(GateKind::pair, "blocks.0.attn.gate.wq"), (Shape{2, 2}));
  EXPECT_EQ(shape_of(GateKind::pair, "blocks.0.attn.gate.wk"), (Shape{2, 2}));
  EXPECT_EQ(shape_of(GateKind::pair, "blocks.0.attn.gate.alpha"), (Shape{1}));
  EXPECT_EQ(shape_of(GateKind::context, "blocks.0.attn.gate.weight"), (Shape{2, 4}));
  EXPECT_EQ(shape_of(GateKind::context, "blocks.0.attn.gate.bias"), (Shape{2}));
  EXPECT_EQ(shape_of(GateKind::routed, "blocks.1.attn.router.weight"), (Shape{3, 4}));
  EXPECT_EQ(shape_of(GateKind::routed, "blocks.1.attn.router.bias"), (Shape{3}));
  GPT none(test::tiny_config(GateKind::none), 0);
  EXPECT_THROW(none.parameter("blocks.0.attn.gate.weight"), ValueError);
}

TEST(GateParams, InitialValues) {
  {
    GPT m(test::tiny_config(GateKind::forget), 0);  // forget's default bias: 3
    for (double b : m.parameter("blocks.0.attn.gate.bias").to_vector()) EXPECT_EQ(b, 3.0);
  }
  for (GateKind kind : {GateKind::output, GateKind::score, GateKind::pair, GateKind::context}) {
    GPT m(test::tiny_config(kind), 0);  // the others' default: 0
    for (double b : m.parameter("blocks.0.attn.gate.bias").to_vector())
      EXPECT_EQ(b, 0.0) << models::gate_kind_name(kind);
  }
  ModelConfig c = test::tiny_config(GateKind::pair);
  c.gate.init_bias = -1.5;
  c.gate.init_weight = "zero";
  GPT pair(c, 0);
  EXPECT_EQ(pair.parameter("blocks.1.attn.gate.bias").to_vector(), (std::vector<double>{-1.5, -1.5}));
  EXPECT_EQ(pair.parameter("blocks.1.attn.gate.alpha").to_vector(), (std::vector<double>{0.0}));
  for (double w : pair.parameter("blocks.1.attn.gate.wq").to_vector()) EXPECT_EQ(w, 0.0);
  c.gate.init_weight = "normal";
  GPT pair_normal(c, 0);
  double sq = 0;
  for (double w : pair_normal.parameter("blocks.1.attn.gate.wk").to_vector()) sq += w * w;
  EXPECT_GT(sq, 0.0);
  ModelConfig r = test::tiny_config(GateKind::routed);
  r.gate.init_bias = 2.0;  // the router's bias starts at 0 whatever init_bias says
  GPT routed(r, 0);
  EXPECT_EQ(routed.parameter("blocks.0.attn.router.bias").to_vector(), (std::vector<double>{0.0, 0.0}));
}

TEST(GateParams, LayersListGatesOnlyThoseBlocks) {
  ModelConfig c = test::tiny_config(GateKind::output);
  c.gate.all_layers = false;
  c.gate.layers = {1};
  GPT model(c, 0);
  EXPECT_EQ(model_parameters(model), spec_parameters(c));
  EXPECT_THROW(model.parameter("blocks.0.attn.gate.weight"), ValueError);
  EXPECT_EQ(model.parameter("blocks.1.attn.gate.weight").shape(), (Shape{4, 4}));
  auto r = model.forward(test::tokens(1, 4, 5, 1), Tensor(), {true, true, false, false});
  EXPECT_EQ(r.stats[0].gate.count, 0);
  EXPECT_EQ(r.stats[1].gate.count, 4 * 4);
}

// ---------------------------------------------------------------- the math against a naive reference

TEST(GateReference, None) { expect_matches_reference(reference_config(GateKind::none)); }
TEST(GateReference, OutputElementwise) { expect_matches_reference(reference_config(GateKind::output)); }
TEST(GateReference, OutputHeadwise) {
  ModelConfig c = reference_config(GateKind::output);
  c.gate.granularity = "headwise";
  expect_matches_reference(c);
}
TEST(GateReference, Score) { expect_matches_reference(reference_config(GateKind::score)); }
TEST(GateReference, Forget) { expect_matches_reference(reference_config(GateKind::forget)); }
TEST(GateReference, Pair) { expect_matches_reference(reference_config(GateKind::pair)); }
TEST(GateReference, Context) { expect_matches_reference(reference_config(GateKind::context)); }
TEST(GateReference, RoutedTopTwoOfThree) { expect_matches_reference(reference_config(GateKind::routed)); }
TEST(GateReference, RoutedTopOne) {
  ModelConfig c = reference_config(GateKind::routed);
  c.gate.top_k = 1;
  expect_matches_reference(c);
}
TEST(GateReference, GumbelInEvalIsSigmoidOverTemperature) {
  for (GateKind kind : {GateKind::output, GateKind::score, GateKind::pair, GateKind::context}) {
    ModelConfig c = reference_config(kind);
    c.gate.activation = "gumbel_sigmoid";
    c.gate.temperature = 0.5;
    expect_matches_reference(c);
  }
}
TEST(GateReference, LayersList) {
  ModelConfig c = reference_config(GateKind::pair);
  c.gate.all_layers = false;
  c.gate.layers = {0};
  expect_matches_reference(c);
}

// ---------------------------------------------------------------- neutral settings = the baseline

TEST(GateNeutral, OutputGateFullyOpen) {
  ModelConfig c = test::tiny_config(GateKind::output);
  c.gate.init_bias = 30;  // σ(30) = 1 − 1e-13
  c.gate.init_weight = "zero";
  EXPECT_LE(neutral_logits_gap(c), 1e-6);
  c.gate.granularity = "headwise";
  EXPECT_LE(neutral_logits_gap(c), 1e-6);
}

TEST(GateNeutral, ScoreGateEqualOnAllKeys) {
  ModelConfig c = test::tiny_config(GateKind::score);
  c.gate.init_bias = -1.3;  // f is the same constant on every key: softmax ignores it
  c.gate.init_weight = "zero";
  EXPECT_LE(neutral_logits_gap(c), 1e-6);
}

TEST(GateNeutral, ForgetGateNeverForgets) {
  ModelConfig c = test::tiny_config(GateKind::forget);
  c.gate.init_bias = 40;  // log σ(40) ≈ −4e-18
  c.gate.init_weight = "zero";
  EXPECT_LE(neutral_logits_gap(c), 1e-6);
}

TEST(GateNeutral, PairGateWithAlphaZero) {
  ModelConfig c = test::tiny_config(GateKind::pair);
  EXPECT_LE(neutral_logits_gap(c,
                               [](GPT& m) {
                                 m.parameter("blocks.0.attn.gate.alpha").fill(-40.0);  // α = σ(−40) ≈ 4e-18
                                 m.parameter("blocks.1.attn.gate.alpha").fill(-40.0);
                               }),
            1e-6);
  // ... and with α = 1/2 but G = 1 everywhere (bias 40): M = 1 again.
  c.gate.init_bias = 40;
  c.gate.init_weight = "zero";
  EXPECT_LE(neutral_logits_gap(c), 1e-6);
}

TEST(GateNeutral, ContextGateFullyOpen) {
  ModelConfig c = test::tiny_config(GateKind::context);
  c.gate.init_bias = 40;
  c.gate.init_weight = "zero";
  EXPECT_LE(neutral_logits_gap(c), 1e-6);
}

TEST(GateNeutral, RoutedWithOneFullSpanExpert) {
  ModelConfig c = test::tiny_config(GateKind::routed);
  c.gate.windows = {0};
  c.gate.top_k = 1;
  EXPECT_LE(neutral_logits_gap(c), 1e-6);
}

TEST(GateNeutral, RoutedWithTwoFullSpanExperts) {
  ModelConfig c = test::tiny_config(GateKind::routed);
  c.gate.windows = {0, 0};  // identical experts: any mixture is the baseline
  c.gate.top_k = 2;
  EXPECT_LE(neutral_logits_gap(c), 1e-6);
}

TEST(GateNeutral, GatesNotActiveAreNotNeutralByAccident) {
  // Guard against a gap function that always returns 0: a half-open output gate changes the output.
  ModelConfig c = test::tiny_config(GateKind::output);
  c.gate.init_weight = "zero";
  EXPECT_GT(neutral_logits_gap(c), 1e-4);
}

// ---------------------------------------------------------------- gumbel_sigmoid

TEST(GateGumbel, NoisyInTrainingDeterministicInEval) {
  for (GateKind kind : {GateKind::output, GateKind::score, GateKind::forget, GateKind::pair, GateKind::context}) {
    ModelConfig c = test::tiny_config(kind, DType::f32);
    c.gate.activation = "gumbel_sigmoid";
    c.gate.temperature = 0.7;
    GPT model(c, 4);
    Tensor idx = test::tokens(2, 6, 5, 2);
    model.train();
    const GeneratorState start = model.noise_generator().state();
    Tensor a = model.forward(idx).logits;
    EXPECT_NE(model.noise_generator().state().offset, start.offset)
        << "no noise drawn for " << models::gate_kind_name(kind);
    Tensor b = model.forward(idx).logits;
    EXPECT_FALSE(test::all_close(a, b, 1e-7, 0)) << models::gate_kind_name(kind) << ": training forwards should differ";
    model.noise_generator().set_state(start);
    EXPECT_TRUE(test::all_close(model.forward(idx).logits, a, 0, 0))
        << models::gate_kind_name(kind) << ": same noise, same output";
    model.eval();
    const GeneratorState before_eval = model.noise_generator().state();
    Tensor e1 = model.forward(idx).logits, e2 = model.forward(idx).logits;
    EXPECT_TRUE(test::all_close(e1, e2, 0, 0)) << models::gate_kind_name(kind);
    EXPECT_EQ(model.noise_generator().state().offset, before_eval.offset) << "eval must not draw noise";
  }
}

TEST(GateGumbel, SigmoidDrawsNoNoise) {
  GPT model(test::tiny_config(GateKind::pair, DType::f32), 4);
  model.train();
  Tensor idx = test::tokens(2, 6, 5, 2);
  Tensor a = model.forward(idx).logits, b = model.forward(idx).logits;
  EXPECT_TRUE(test::all_close(a, b, 0, 0));
  EXPECT_EQ(model.noise_generator().state().offset, 0u);
}

// ---------------------------------------------------------------- statistics and regularisers

TEST(GateStats, ValuesInRangeForEveryKind) {
  for (GateKind kind : test::all_gate_kinds()) {
    ModelConfig c = test::tiny_config(kind, DType::f32);
    c.gate.top_k = 2;  // routed: r̃ strictly inside (0, 1)
    GPT model(c, 6);
    test::perturb_gate_parameters(model, 1);
    model.eval();
    models::ForwardOptions opt;
    opt.collect_stats = opt.attn_entropy = opt.gate_entropy = true;
    const std::int64_t B = 2, T = 6;
    auto r = model.forward(test::tokens(B, T, 5, 4), Tensor(), opt);
    ASSERT_EQ(r.stats.size(), 2u);
    double entropy_mean = 0;
    for (const models::LayerStats& s : r.stats) {
      const std::string what = models::gate_kind_name(kind);
      EXPECT_EQ(s.attention.entropy_count, B * c.n_head * T) << what;
      EXPECT_EQ(s.attention.sink_count, B * c.n_head * (T - 1)) << what;
      EXPECT_GE(s.attn_entropy(), 0.0) << what;
      EXPECT_LE(s.attn_entropy(), std::log(static_cast<double>(T))) << what;
      EXPECT_GE(s.sink_ratio(), 0.0) << what;
      EXPECT_LE(s.sink_ratio(), 1.0) << what;
      entropy_mean += s.attn_entropy() / 2;
      if (kind == GateKind::none) {
        EXPECT_EQ(s.gate.count, 0);
        continue;
      }
      EXPECT_GT(s.gate.count, 0) << what;
      EXPECT_GT(s.gate.mean(), 0.0) << what;
      EXPECT_LT(s.gate.mean(), 1.0) << what;
      EXPECT_GE(s.gate.std(), 0.0) << what;
      EXPECT_GE(s.gate.frac_below_0_1(), 0.0) << what;
      EXPECT_LE(s.gate.frac_above_0_9(), 1.0) << what;
    }
    // The regulariser and the statistic are the same quantity (equal counts per layer).
    EXPECT_NEAR(r.attn_entropy.item(), entropy_mean, 1e-5) << models::gate_kind_name(kind);
    EXPECT_EQ(r.gate_entropy.defined(), kind != GateKind::none);
  }
}

TEST(GateStats, GateValueCountsPerKind) {
  const std::int64_t B = 2, T = 5, H = 2, d = 2;
  auto count = [&](ModelConfig c) {
    GPT model(c, 0);
    return model.forward(test::tokens(B, T, 5, 1), Tensor(), {true, false, false, false}).stats[0].gate.count;
  };
  ModelConfig c = test::tiny_config(GateKind::output);
  EXPECT_EQ(count(c), B * T * H * d);
  c.gate.granularity = "headwise";
  EXPECT_EQ(count(c), B * T * H);
  EXPECT_EQ(count(test::tiny_config(GateKind::score)), B * T * H);
  EXPECT_EQ(count(test::tiny_config(GateKind::forget)), B * T * H);
  EXPECT_EQ(count(test::tiny_config(GateKind::pair)), B * H * T * (T + 1) / 2);
  EXPECT_EQ(count(test::tiny_config(GateKind::context)), B * H * T * d);
  ModelConfig r = test::tiny_config(GateKind::routed);
  r.gate.top_k = 2;
  EXPECT_EQ(count(r), B * T * 2);
}

TEST(GateStats, HalfOpenGatesHaveEntropyLn2AndMeanHalf) {
  for (GateKind kind :
       {GateKind::output, GateKind::score, GateKind::forget, GateKind::pair, GateKind::context, GateKind::routed}) {
    ModelConfig c = test::tiny_config(kind);
    c.gate.init_weight = "zero";
    c.gate.init_bias = 0.0;  // σ(0) = 1/2; routed: a zero router with top-2 of 2 gives r̃ = 1/2
    c.gate.top_k = 2;
    GPT model(c, 0);
    models::ForwardOptions opt;
    opt.collect_stats = opt.gate_entropy = true;
    auto r = model.forward(test::tokens(2, 6, 5, 3), Tensor(), opt);
    EXPECT_NEAR(r.gate_entropy.item(), std::log(2.0), 1e-12) << models::gate_kind_name(kind);
    EXPECT_NEAR(r.stats[1].gate.mean(), 0.5, 1e-12) << models::gate_kind_name(kind);
    EXPECT_NEAR(r.stats[1].gate.std(), 0.0, 1e-6) << models::gate_kind_name(kind);
  }
}

TEST(GateStats, RoutedTopOneGateIsOneWithZeroEntropy) {
  GPT model(test::tiny_config(GateKind::routed), 0);
  models::ForwardOptions opt;
  opt.collect_stats = opt.gate_entropy = true;
  auto r = model.forward(test::tokens(2, 6, 5, 3), Tensor(), opt);
  EXPECT_EQ(r.gate_entropy.item(), 0.0);
  EXPECT_EQ(r.stats[0].gate.mean(), 1.0);
}

TEST(GateStats, RoutedSinkCombinesExpertsExactly) {
  // Two identical full-span experts mixed by any r̃ have the baseline's attention rows exactly.
  ModelConfig c = test::tiny_config(GateKind::routed);
  c.gate.windows = {0, 0};
  c.gate.top_k = 2;
  ModelConfig base = c;
  base.gate.kind = GateKind::none;
  GPT a(base, 1), b(c, 2);
  test::copy_shared_parameters(a, b);
  test::perturb_gate_parameters(b, 3);
  Tensor idx = test::tokens(2, 6, 5, 1);
  auto ra = a.forward(idx, Tensor(), {true, false, true, false});
  auto rb = b.forward(idx, Tensor(), {true, false, true, false});
  for (std::size_t l = 0; l < 2; ++l) {
    EXPECT_NEAR(ra.stats[l].sink_ratio(), rb.stats[l].sink_ratio(), 1e-12);
    EXPECT_NEAR(ra.stats[l].attn_entropy(), rb.stats[l].attn_entropy(), 1e-12);
  }
  EXPECT_NEAR(ra.attn_entropy.item(), rb.attn_entropy.item(), 1e-12);
}

// ---------------------------------------------------------------- routed: top-k and balance

TEST(GateRouted, TiesGoToTheLowerIndex) {
  // A zero router ties every expert: top-1 must pick expert 0 (window 2), i.e. the model equals a
  // single-expert model with that window.
  ModelConfig c = test::tiny_config(GateKind::routed);
  c.gate.init_weight = "zero";
  c.gate.windows = {2, 0};
  ModelConfig single = c;
  single.gate.windows = {2};
  GPT a(c, 1), b(single, 1);
  test::copy_shared_parameters(b, a);  // shared names only; the router shapes differ
  Tensor idx = test::tokens(2, 6, 5, 1);
  EXPECT_TRUE(test::all_close(a.forward(idx).logits, b.forward(idx).logits, 1e-12, 0));
  // And it is not the full-span expert.
  single.gate.windows = {0};
  GPT full(single, 1);
  test::copy_shared_parameters(full, a);
  EXPECT_FALSE(test::all_close(a.forward(idx).logits, full.forward(idx).logits, 1e-6, 0));
}

TEST(GateRouted, BalanceLossIsOneWhenEveryExpertIsSelected) {
  ModelConfig c = test::tiny_config(GateKind::routed);
  c.gate.windows = {0, 2, 3};
  c.gate.top_k = 3;
  GPT model(c, 0);
  test::perturb_gate_parameters(model, 2);
  models::ForwardOptions opt;
  opt.router_balance = true;
  auto r = model.forward(test::tokens(2, 6, 5, 1), Tensor(), opt);
  EXPECT_NEAR(r.router_balance.item(), 2.0, 1e-12);  // 1 per routed layer, two layers
}

TEST(GateRouted, BalanceLossByHand) {
  // Three tokens, two experts, top-1 picks 0, 0, 1: f = [2/3, 1/3]; P = mean r = [0.6, 0.4].
  Tensor r = Tensor::from({0.8, 0.2, 0.6, 0.4, 0.4, 0.6}, {1, 3, 2}, DType::f64).set_requires_grad(true);
  Tensor mask = Tensor::from({1, 0, 1, 0, 0, 1}, {1, 3, 2}, DType::f64);
  Tensor loss = models::switch_balance_loss(r, mask, 1);
  EXPECT_NEAR(loss.item(), 2.0 * (2.0 / 3 * 0.6 + 1.0 / 3 * 0.4), 1e-12);
  loss.backward();  // d/dr_te = E · f_e / tokens
  EXPECT_TRUE(test::all_close(
      r.grad(), Tensor::from({4.0 / 9, 2.0 / 9, 4.0 / 9, 2.0 / 9, 4.0 / 9, 2.0 / 9}, {1, 3, 2}, DType::f64), 1e-12, 0));
}

TEST(GateRouted, NanRouterDoesNotCrash) {
  ModelConfig c = test::tiny_config(GateKind::routed);
  c.gate.windows = {0, 2, 3};
  c.gate.top_k = 2;
  GPT model(c, 0);
  model.parameter("blocks.0.attn.router.weight").fill(NAN);
  models::ForwardOptions opt;
  opt.collect_stats = opt.gate_entropy = opt.attn_entropy = opt.router_balance = true;
  auto r = model.forward(test::tokens(2, 6, 5, 1), Tensor(), opt);
  EXPECT_TRUE(std::isnan(r.logits.at(0)));
}

TEST(GateRouted, BalanceLossOnlyForRoutedModels) {
  GPT model(test::tiny_config(GateKind::output), 0);
  models::ForwardOptions opt;
  opt.router_balance = true;
  EXPECT_FALSE(model.forward(test::tokens(1, 3, 5, 1), Tensor(), opt).router_balance.defined());
}

// ---------------------------------------------------------------- helpers

TEST(GateHelpers, MergeAndSplitHeadsAreInverse) {
  Tensor x = test::rand({2, 3, 6}, 1);
  Tensor h = models::split_heads(x, 3);
  EXPECT_EQ(h.shape(), (Shape{2, 3, 3, 2}));
  // head n of token t holds columns n·d … n·d+d−1
  EXPECT_EQ(h.at(((1 * 3 + 2) * 3 + 1) * 2 + 1), x.at((1 * 3 + 1) * 6 + 2 * 2 + 1));
  EXPECT_TRUE(test::all_close(models::merge_heads(h), x, 0, 0));
  EXPECT_THROW(models::split_heads(x, 4), ShapeError);
  EXPECT_THROW(models::merge_heads(x), ShapeError);
}

TEST(GateHelpers, BinaryEntropyFromLogitIsStable) {
  Tensor u = Tensor::from({-1000, -40, -1, 0, 2, 40, 1000}, {7}, DType::f64).set_requires_grad(true);
  Tensor h = models::binary_entropy_from_logit(u);
  std::vector<double> v = h.to_vector();
  EXPECT_NEAR(v[3], std::log(2.0), 1e-15);
  for (std::size_t i = 0; i < v.size(); ++i) {
    double s = 1 / (1 + std::exp(-u.at(static_cast<std::int64_t>(i))));
    double want = (s <= 0 || s >= 1) ? 0.0 : -s * std::log(s) - (1 - s) * std::log1p(-s);
    EXPECT_NEAR(v[i], want, 1e-12) << "u=" << u.at(static_cast<std::int64_t>(i));
  }
  ops::sum(h).backward();
  for (double g : u.grad().to_vector()) EXPECT_TRUE(std::isfinite(g));
  EXPECT_TRUE(test::grads_ok([](const std::vector<Tensor>& x) { return models::binary_entropy_from_logit(x[0]); },
                             {Tensor::from({-5, -0.3, 0.1, 3}, {4}, DType::f64)}));
}

TEST(GateHelpers, GumbelWithoutNoiseSourceIsAnError) {
  ModelConfig c = test::tiny_config(GateKind::output, DType::f32);
  c.gate.activation = "gumbel_sigmoid";
  GPT model(c, 0);
  models::AttentionContext ctx;
  ctx.training = true;  // ctx.noise left null
  Tensor h = test::rand({1, 3, 4}, 1, -1, 1, DType::f32);
  auto& block = (*model.blocks)[0];
  EXPECT_THROW(block.attn->forward(h, ctx), ValueError);
}

}  // namespace gattn
