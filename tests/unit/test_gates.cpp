// The gate kinds (docs/gates.md): parameter names, shapes and initial values, the math against a
// naive T×T reference, neutral settings that reduce to the baseline, the gumbel activation,
// statistics, the regularisers and the routed gate's top-k and balance loss. Several gates in one
// block: tests/unit/test_gate_composition.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <numeric>

#include "gate_reference.h"
#include "model_test_util.h"
#include "models/attention.h"
#include "models/gating/registry.h"
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

using models::GPT;
using models::ModelConfig;
using std::string;

namespace {

using test::expect_matches_reference;
using test::reference_logits;
using test::ShapeMap;
using test::spec_parameters;

ShapeMap model_parameters(GPT& model) {
  ShapeMap m;
  for (auto& [name, p] : model.named_parameters()) {
    EXPECT_EQ(m.count(name), 0u) << name << " listed twice";
    m[name] = p.shape();
  }
  return m;
}

// Gates pushed away from their neutral start (normal weights, a nonzero bias and alpha) so the
// reference comparison exercises every term.
ModelConfig reference_config(std::string kind) {
  ModelConfig c = test::tiny_config(kind);
  c.gate.init_bias = 0.7;
  c.gate.options["windows"] = {0, 2, 3};
  c.gate.options["top_k"] = 2;
  return c;
}

// A gated model next to the baseline with the same shared weights.
double neutral_logits_gap(ModelConfig gated, const std::function<void(GPT&)>& adjust = {}) {
  ModelConfig base = gated;
  base.gate.kind = "none";
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

TEST(GateParams, NamesAndShapesMatchTheRegistryForEveryKind) {
  for (std::string kind : test::all_gate_kinds()) {
    ModelConfig c = test::tiny_config(kind);
    GPT model(c, 0);
    EXPECT_EQ(model_parameters(model), spec_parameters(c)) << std::string(kind);
  }
  ModelConfig headwise = test::tiny_config("output");
  headwise.gate.options["granularity"] = "headwise";
  GPT model(headwise, 0);
  EXPECT_EQ(model_parameters(model), spec_parameters(headwise));
  EXPECT_EQ(model.parameter("blocks.0.attn.gate.weight").shape(), (Shape{2, 4}));
}

TEST(GateParams, ExplicitSpecNamesForEachKind) {
  // Spelled out once more by hand, so a wrong spec_parameters() cannot hide a wrong name.
  auto shape_of = [](std::string kind, const std::string& name) {
    ModelConfig c = test::tiny_config(kind);
    c.gate.options["windows"] = {0, 2, 4};
    GPT model(c, 0);
    return model.parameter(name).shape();
  };
  EXPECT_EQ(shape_of("output", "blocks.1.attn.gate.weight"), (Shape{4, 4}));
  EXPECT_EQ(shape_of("score", "blocks.0.attn.gate.weight"), (Shape{2, 4}));
  EXPECT_EQ(shape_of("forget", "blocks.0.attn.gate.bias"), (Shape{2}));
  EXPECT_EQ(shape_of("pair", "blocks.0.attn.gate.wq"), (Shape{2, 2}));
  EXPECT_EQ(shape_of("pair", "blocks.0.attn.gate.wk"), (Shape{2, 2}));
  EXPECT_EQ(shape_of("pair", "blocks.0.attn.gate.alpha"), (Shape{1}));
  EXPECT_EQ(shape_of("context", "blocks.0.attn.gate.weight"), (Shape{2, 4}));
  EXPECT_EQ(shape_of("context", "blocks.0.attn.gate.bias"), (Shape{2}));
  EXPECT_EQ(shape_of("routed", "blocks.1.attn.router.weight"), (Shape{3, 4}));
  EXPECT_EQ(shape_of("routed", "blocks.1.attn.router.bias"), (Shape{3}));
  GPT none(test::tiny_config("none"), 0);
  EXPECT_THROW(none.parameter("blocks.0.attn.gate.weight"), ValueError);
}

TEST(GateParams, InitialValues) {
  {
    GPT m(test::tiny_config("forget"), 0);  // forget's default bias: 3
    for (double b : m.parameter("blocks.0.attn.gate.bias").to_vector()) EXPECT_EQ(b, 3.0);
  }
  for (std::string kind : {"output", "score", "pair", "context"}) {
    GPT m(test::tiny_config(kind), 0);  // the others' default: 0
    for (double b : m.parameter("blocks.0.attn.gate.bias").to_vector()) EXPECT_EQ(b, 0.0) << std::string(kind);
  }
  ModelConfig c = test::tiny_config("pair");
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
  // alpha_init: α = σ(alpha) starts there; the default 0.5 is alpha 0 exactly (the math of every
  // config written before the key existed).
  c.gate.options["alpha_init"] = 0.7;
  GPT pair_alpha(c, 0);
  EXPECT_NEAR(1.0 / (1.0 + std::exp(-pair_alpha.parameter("blocks.0.attn.gate.alpha").item())), 0.7, 1e-12);
  c.gate.options["alpha_init"] = 0.5;
  EXPECT_EQ(GPT(c, 0).parameter("blocks.0.attn.gate.alpha").to_vector(), (std::vector<double>{0.0}));
  // init_std scales the same normal draws: 0.1 gives 5× the weights of the default 0.02.
  ModelConfig wide = test::tiny_config("score");
  const std::vector<double> base = GPT(wide, 0).parameter("blocks.0.attn.gate.weight").to_vector();
  wide.gate.init_std = 0.1;
  const std::vector<double> scaled = GPT(wide, 0).parameter("blocks.0.attn.gate.weight").to_vector();
  ASSERT_EQ(scaled.size(), base.size());
  for (std::size_t i = 0; i < base.size(); ++i) EXPECT_NEAR(scaled[i], 5.0 * base[i], 1e-12);
  ModelConfig r = test::tiny_config("routed");
  r.gate.init_bias = 2.0;  // the router's bias starts at 0 whatever init_bias says
  GPT routed(r, 0);
  EXPECT_EQ(routed.parameter("blocks.0.attn.router.bias").to_vector(), (std::vector<double>{0.0, 0.0}));
}

TEST(GateParams, LayersListGatesOnlyThoseBlocks) {
  ModelConfig c = test::tiny_config("output");
  c.gate.all_layers = false;
  c.gate.layers = {1};
  GPT model(c, 0);
  EXPECT_EQ(model_parameters(model), spec_parameters(c));
  EXPECT_THROW(model.parameter("blocks.0.attn.gate.weight"), ValueError);
  EXPECT_EQ(model.parameter("blocks.1.attn.gate.weight").shape(), (Shape{4, 4}));
  models::ForwardOptions opt;
  opt.collect_stats = true;
  auto r = model.forward(test::tokens(1, 4, 5, 1), Tensor(), opt);
  EXPECT_EQ(r.stats[0].gate.count, 0);
  EXPECT_EQ(r.stats[1].gate.count, 4 * 4);
}

// ---------------------------------------------------------------- the math against a naive reference

TEST(GateReference, None) { expect_matches_reference(reference_config("none")); }
TEST(GateReference, OutputElementwise) { expect_matches_reference(reference_config("output")); }
TEST(GateReference, OutputHeadwise) {
  ModelConfig c = reference_config("output");
  c.gate.options["granularity"] = "headwise";
  expect_matches_reference(c);
}
TEST(GateReference, Score) { expect_matches_reference(reference_config("score")); }
TEST(GateReference, Forget) { expect_matches_reference(reference_config("forget")); }
TEST(GateReference, Pair) { expect_matches_reference(reference_config("pair")); }
TEST(GateReference, Context) { expect_matches_reference(reference_config("context")); }
TEST(GateReference, RoutedTopTwoOfThree) { expect_matches_reference(reference_config("routed")); }
TEST(GateReference, RoutedTopOne) {
  ModelConfig c = reference_config("routed");
  c.gate.options["top_k"] = 1;
  expect_matches_reference(c);
}
TEST(GateReference, GumbelInEvalIsSigmoidOverTemperature) {
  for (std::string kind : {"output", "score", "pair", "context"}) {
    ModelConfig c = reference_config(kind);
    c.gate.activation = "gumbel_sigmoid";
    c.gate.temperature = 0.5;
    expect_matches_reference(c);
  }
}
TEST(GateReference, LayersList) {
  ModelConfig c = reference_config("pair");
  c.gate.all_layers = false;
  c.gate.layers = {0};
  expect_matches_reference(c);
}

// ---------------------------------------------------------------- neutral settings = the baseline

TEST(GateNeutral, OutputGateFullyOpen) {
  ModelConfig c = test::tiny_config("output");
  c.gate.init_bias = 30;  // σ(30) = 1 − 1e-13
  c.gate.init_weight = "zero";
  EXPECT_LE(neutral_logits_gap(c), 1e-6);
  c.gate.options["granularity"] = "headwise";
  EXPECT_LE(neutral_logits_gap(c), 1e-6);
}

TEST(GateNeutral, ScoreGateEqualOnAllKeys) {
  ModelConfig c = test::tiny_config("score");
  c.gate.init_bias = -1.3;  // f is the same constant on every key: softmax ignores it
  c.gate.init_weight = "zero";
  EXPECT_LE(neutral_logits_gap(c), 1e-6);
}

TEST(GateNeutral, ForgetGateNeverForgets) {
  ModelConfig c = test::tiny_config("forget");
  c.gate.init_bias = 40;  // log σ(40) ≈ −4e-18
  c.gate.init_weight = "zero";
  EXPECT_LE(neutral_logits_gap(c), 1e-6);
}

TEST(GateNeutral, PairGateWithAlphaZero) {
  ModelConfig c = test::tiny_config("pair");
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
  ModelConfig c = test::tiny_config("context");
  c.gate.init_bias = 40;
  c.gate.init_weight = "zero";
  EXPECT_LE(neutral_logits_gap(c), 1e-6);
}

TEST(GateNeutral, RoutedWithOneFullSpanExpert) {
  ModelConfig c = test::tiny_config("routed");
  c.gate.options["windows"] = {0};
  c.gate.options["top_k"] = 1;
  EXPECT_LE(neutral_logits_gap(c), 1e-6);
}

TEST(GateNeutral, RoutedWithTwoFullSpanExperts) {
  ModelConfig c = test::tiny_config("routed");
  c.gate.options["windows"] = {0, 0};  // identical experts: any mixture is the baseline
  c.gate.options["top_k"] = 2;
  EXPECT_LE(neutral_logits_gap(c), 1e-6);
}

TEST(GateNeutral, GatesNotActiveAreNotNeutralByAccident) {
  // Guard against a gap function that always returns 0: a half-open output gate changes the output.
  ModelConfig c = test::tiny_config("output");
  c.gate.init_weight = "zero";
  EXPECT_GT(neutral_logits_gap(c), 1e-4);
}

// ---------------------------------------------------------------- gumbel_sigmoid

TEST(GateGumbel, NoisyInTrainingDeterministicInEval) {
  for (std::string kind : {"output", "score", "forget", "pair", "context"}) {
    ModelConfig c = test::tiny_config(kind, DType::f32);
    c.gate.activation = "gumbel_sigmoid";
    c.gate.temperature = 0.7;
    GPT model(c, 4);
    Tensor idx = test::tokens(2, 6, 5, 2);
    model.train();
    const GeneratorState start = model.noise_generator().state();
    Tensor a = model.forward(idx).logits;
    EXPECT_NE(model.noise_generator().state().offset, start.offset) << "no noise drawn for " << std::string(kind);
    Tensor b = model.forward(idx).logits;
    EXPECT_FALSE(test::all_close(a, b, 1e-7, 0)) << std::string(kind) << ": training forwards should differ";
    model.noise_generator().set_state(start);
    EXPECT_TRUE(test::all_close(model.forward(idx).logits, a, 0, 0))
        << std::string(kind) << ": same noise, same output";
    model.eval();
    const GeneratorState before_eval = model.noise_generator().state();
    Tensor e1 = model.forward(idx).logits, e2 = model.forward(idx).logits;
    EXPECT_TRUE(test::all_close(e1, e2, 0, 0)) << std::string(kind);
    EXPECT_EQ(model.noise_generator().state().offset, before_eval.offset) << "eval must not draw noise";
  }
}

TEST(GateGumbel, SigmoidDrawsNoNoise) {
  GPT model(test::tiny_config("pair", DType::f32), 4);
  model.train();
  Tensor idx = test::tokens(2, 6, 5, 2);
  Tensor a = model.forward(idx).logits, b = model.forward(idx).logits;
  EXPECT_TRUE(test::all_close(a, b, 0, 0));
  EXPECT_EQ(model.noise_generator().state().offset, 0u);
}

// ---------------------------------------------------------------- statistics and regularisers

TEST(GateStats, ValuesInRangeForEveryKind) {
  for (std::string kind : test::all_gate_kinds()) {
    ModelConfig c = test::tiny_config(kind, DType::f32);
    c.gate.options["top_k"] = 2;  // routed: r̃ strictly inside (0, 1)
    GPT model(c, 6);
    test::perturb_gate_parameters(model, 1);
    model.eval();
    models::ForwardOptions opt;
    opt.collect_stats = true;
    opt.regularizers = {"attn_entropy", "gate_entropy"};
    const std::int64_t B = 2, T = 6;
    auto r = model.forward(test::tokens(B, T, 5, 4), Tensor(), opt);
    ASSERT_EQ(r.stats.size(), 2u);
    double entropy_mean = 0;
    for (const models::LayerStats& s : r.stats) {
      const std::string what = std::string(kind);
      EXPECT_EQ(s.attention.entropy_count, B * c.n_head * T) << what;
      EXPECT_EQ(s.attention.sink_count, B * c.n_head * (T - 1)) << what;
      EXPECT_GE(s.attn_entropy(), 0.0) << what;
      EXPECT_LE(s.attn_entropy(), std::log(static_cast<double>(T))) << what;
      EXPECT_GE(s.sink_ratio(), 0.0) << what;
      EXPECT_LE(s.sink_ratio(), 1.0) << what;
      entropy_mean += s.attn_entropy() / 2;
      if (kind == "none") {
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
    EXPECT_NEAR(r.regularizer("attn_entropy").item(), entropy_mean, 1e-5) << std::string(kind);
    EXPECT_EQ(r.regularizer("gate_entropy").defined(), kind != "none");
  }
}

TEST(GateStats, GateValueCountsPerKind) {
  const std::int64_t B = 2, T = 5, H = 2, d = 2;
  auto count = [&](ModelConfig c) {
    GPT model(c, 0);
    models::ForwardOptions opt;
    opt.collect_stats = true;
    return model.forward(test::tokens(B, T, 5, 1), Tensor(), opt).stats[0].gate.count;
  };
  ModelConfig c = test::tiny_config("output");
  EXPECT_EQ(count(c), B * T * H * d);
  c.gate.options["granularity"] = "headwise";
  EXPECT_EQ(count(c), B * T * H);
  EXPECT_EQ(count(test::tiny_config("score")), B * T * H);
  EXPECT_EQ(count(test::tiny_config("forget")), B * T * H);
  EXPECT_EQ(count(test::tiny_config("pair")), B * H * T * (T + 1) / 2);
  EXPECT_EQ(count(test::tiny_config("context")), B * H * T * d);
  ModelConfig r = test::tiny_config("routed");
  r.gate.options["top_k"] = 2;
  EXPECT_EQ(count(r), B * T * 2);
}

TEST(GateStats, HalfOpenGatesHaveEntropyLn2AndMeanHalf) {
  for (std::string kind : {"output", "score", "forget", "pair", "context", "routed"}) {
    ModelConfig c = test::tiny_config(kind);
    c.gate.init_weight = "zero";
    c.gate.init_bias = 0.0;  // σ(0) = 1/2; routed: a zero router with top-2 of 2 gives r̃ = 1/2
    c.gate.options["top_k"] = 2;
    GPT model(c, 0);
    models::ForwardOptions opt;
    opt.collect_stats = true;
    opt.regularizers = {"gate_entropy"};
    auto r = model.forward(test::tokens(2, 6, 5, 3), Tensor(), opt);
    EXPECT_NEAR(r.regularizer("gate_entropy").item(), std::log(2.0), 1e-12) << std::string(kind);
    EXPECT_NEAR(r.stats[1].gate.mean(), 0.5, 1e-12) << std::string(kind);
    EXPECT_NEAR(r.stats[1].gate.std(), 0.0, 1e-6) << std::string(kind);
  }
}

TEST(GateStats, RoutedTopOneGateIsTheRouterProbability) {
  // A zero router over two experts: r = (½, ½); top-1 keeps r̃ = ½ (Switch), not a renormalised 1.
  ModelConfig c = test::tiny_config("routed");
  c.gate.init_weight = "zero";
  GPT model(c, 0);
  models::ForwardOptions opt;
  opt.collect_stats = true;
  opt.regularizers = {"gate_entropy"};
  auto r = model.forward(test::tokens(2, 6, 5, 3), Tensor(), opt);
  EXPECT_NEAR(r.regularizer("gate_entropy").item(), std::log(2.0), 1e-12);
  EXPECT_NEAR(r.stats[0].gate.mean(), 0.5, 1e-12);
  EXPECT_EQ(r.stats[0].gate.count, 2 * 6);
  // One expert: r = 1 exactly, and its entropy 0.
  c.gate.options["windows"] = {0};
  GPT single(c, 0);
  auto s = single.forward(test::tokens(2, 6, 5, 3), Tensor(), opt);
  EXPECT_EQ(s.regularizer("gate_entropy").item(), 0.0);
  EXPECT_EQ(s.stats[0].gate.mean(), 1.0);
}

TEST(GateStats, RoutedSinkCombinesExpertsExactly) {
  // Two identical full-span experts mixed by any r̃ have the baseline's attention rows exactly.
  ModelConfig c = test::tiny_config("routed");
  c.gate.options["windows"] = {0, 0};
  c.gate.options["top_k"] = 2;
  ModelConfig base = c;
  base.gate.kind = "none";
  GPT a(base, 1), b(c, 2);
  test::copy_shared_parameters(a, b);
  test::perturb_gate_parameters(b, 3);
  Tensor idx = test::tokens(2, 6, 5, 1);
  models::ForwardOptions opt;
  opt.collect_stats = true;
  opt.regularizers = {"attn_entropy"};
  auto ra = a.forward(idx, Tensor(), opt);
  auto rb = b.forward(idx, Tensor(), opt);
  for (std::size_t l = 0; l < 2; ++l) {
    EXPECT_NEAR(ra.stats[l].sink_ratio(), rb.stats[l].sink_ratio(), 1e-12);
    EXPECT_NEAR(ra.stats[l].attn_entropy(), rb.stats[l].attn_entropy(), 1e-12);
  }
  EXPECT_NEAR(ra.regularizer("attn_entropy").item(), rb.regularizer("attn_entropy").item(), 1e-12);
}

// ---------------------------------------------------------------- routed: top-k and balance

TEST(GateRouted, TiesGoToTheLowerIndex) {
  // A zero router ties both experts (r = ½ each): top-1 must pick expert 0 (window 2), so the model
  // equals one whose two experts both have window 2 — and not one whose picked expert sees everything.
  ModelConfig c = test::tiny_config("routed");
  c.gate.init_weight = "zero";
  c.gate.options["windows"] = {2, 0};
  ModelConfig same = c;
  same.gate.options["windows"] = {2, 2};
  GPT a(c, 1), b(same, 1);
  test::copy_shared_parameters(b, a);
  Tensor idx = test::tokens(2, 6, 5, 1);
  EXPECT_TRUE(test::all_close(a.forward(idx).logits, b.forward(idx).logits, 1e-12, 0));
  same.gate.options["windows"] = {0, 0};
  GPT full(same, 1);
  test::copy_shared_parameters(full, a);
  EXPECT_FALSE(test::all_close(a.forward(idx).logits, full.forward(idx).logits, 1e-6, 0));
}

TEST(GateRouted, BalanceLossIsOneWhenEveryExpertIsSelected) {
  ModelConfig c = test::tiny_config("routed");
  c.gate.options["windows"] = {0, 2, 3};
  c.gate.options["top_k"] = 3;
  GPT model(c, 0);
  test::perturb_gate_parameters(model, 2);
  models::ForwardOptions opt;
  opt.regularizers = {"router_balance"};
  auto r = model.forward(test::tokens(2, 6, 5, 1), Tensor(), opt);
  EXPECT_NEAR(r.regularizer("router_balance").item(), 2.0, 1e-12);  // 1 per routed layer, two layers
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
  ModelConfig c = test::tiny_config("routed");
  c.gate.options["windows"] = {0, 2, 3};
  c.gate.options["top_k"] = 2;
  GPT model(c, 0);
  model.parameter("blocks.0.attn.router.weight").fill(NAN);
  models::ForwardOptions opt;
  opt.collect_stats = true;
  opt.regularizers = {"gate_entropy", "attn_entropy", "router_balance"};
  auto r = model.forward(test::tokens(2, 6, 5, 1), Tensor(), opt);
  EXPECT_TRUE(std::isnan(r.logits.at(0)));
}

TEST(GateRouted, BalanceLossOnlyForRoutedModels) {
  GPT model(test::tiny_config("output"), 0);
  models::ForwardOptions opt;
  opt.regularizers = {"router_balance"};
  EXPECT_FALSE(model.forward(test::tokens(1, 3, 5, 1), Tensor(), opt).regularizer("router_balance").defined());
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
  ModelConfig c = test::tiny_config("output", DType::f32);
  c.gate.activation = "gumbel_sigmoid";
  GPT model(c, 0);
  models::AttentionContext ctx;
  ctx.training = true;  // ctx.noise left null
  Tensor h = test::rand({1, 3, 4}, 1, -1, 1, DType::f32);
  auto& block = (*model.blocks)[0];
  EXPECT_THROW(block.attn->forward(h, ctx), ValueError);
}

}  // namespace gattn
