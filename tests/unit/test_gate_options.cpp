// The shared gate options (docs/gates.md "Gate options"): each against the naive reference in eval,
// whole-model gradchecks in training mode, the neutral identities (τ = 1, one group per head, a ramp
// that is over, dropout in eval), the straight-through hard gate, dropout's draws, the per-head
// statistics and the gate_l1 regulariser.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "gate_reference.h"
#include "model_test_util.h"
#include "models/gating/activation.h"
#include "models/gating/options.h"
#include "models/gpt.h"
#include "models/kv_cache.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "ops/unary.h"
#include "test_util.h"

namespace gattn {

using models::GPT;
using models::ModelConfig;

namespace {

// Four heads of two dims, so groups of 2 and partial head lists mean something.
ModelConfig options_config(const std::string& kind, const nlohmann::json& options,
                           const std::string& activation = "sigmoid") {
  ModelConfig c = test::tiny_config(kind);
  c.n_head = 4;
  c.n_embd = 8;
  c.gate.activation = activation;
  for (auto it = options.begin(); it != options.end(); ++it) c.gate.options[it.key()] = it.value();
  if (options.contains("temperature")) {
    c.gate.temperature = options["temperature"].get<double>();
    c.gate.options.erase("temperature");
  }
  c.validate();
  return c;
}

// The model in eval at `step` against the naive reference, gates away from their start.
void expect_reference(const ModelConfig& c, std::int64_t step, double tol = 1e-9) {
  GPT model(c, 11);
  test::perturb_gate_parameters(model, 5);
  model.set_step(step);
  model.eval();
  Tensor idx = test::tokens(2, 6, c.vocab_size, 3);
  NoGradGuard no_grad;
  EXPECT_TRUE(test::all_close(model.forward(idx).logits, test::reference_logits(model, idx), tol, tol))
      << c.gate.kind << " " << c.gate.options.dump() << " step " << step;
}

Tensor objective(GPT& model, const Tensor& idx, const Tensor& targets) {
  models::ForwardOptions fo;
  fo.regularizers = {models::kGateEntropy, models::kGateL1};
  models::ForwardResult r = model.forward(idx, targets, fo);
  Tensor total = r.loss;
  for (const auto& [name, t] : r.regularizers) total = total + t * 0.3;
  return total;
}

void expect_gradcheck(const ModelConfig& c, std::int64_t step) {
  GPT model(c, 3);
  test::perturb_gate_parameters(model, 8);
  model.set_step(step);
  Tensor idx = test::tokens(2, 5, c.vocab_size, 1), targets = test::tokens(2, 5, c.vocab_size, 2);
  const GeneratorState noise = model.noise_generator().state();
  model.train();
  EXPECT_TRUE(test::model_grads_ok(model,
                                   [&] {
                                     model.noise_generator().set_state(noise);  // the same dropout draws every call
                                     return objective(model, idx, targets);
                                   }))
      << c.gate.kind << " " << c.gate.options.dump();
}

Tensor eval_logits(GPT& model, std::int64_t step) {
  model.set_step(step);
  model.eval();
  NoGradGuard no_grad;
  return model.forward(test::tokens(2, 6, model.config().vocab_size, 3)).logits;
}

bool bitwise_equal(const Tensor& a, const Tensor& b) { return a.to_vector() == b.to_vector(); }

// Generation through the KV cache, in uneven chunks, gives the full forward's logits at `step`.
void expect_cache_equals_full_forward(const ModelConfig& c, std::int64_t step) {
  GPT model(c, 3);
  test::perturb_gate_parameters(model, 11);
  model.set_step(step);
  model.eval();
  const std::int64_t B = 2, T = 9;
  Tensor idx = test::tokens(B, T, c.vocab_size, 5);
  NoGradGuard no_grad;
  const Tensor full = model.forward(idx).logits;
  models::KVCache cache(c, B);
  std::int64_t pos = 0;
  for (std::int64_t chunk : {3, 1, 2, 1, 2}) {
    Tensor logits = model.forward_cached(ops::slice(idx, 1, pos, pos + chunk), cache);
    EXPECT_TRUE(test::all_close(logits, ops::slice(full, 1, pos, pos + chunk), 1e-11, 1e-9))
        << c.gate.kind << " step " << step << " at " << pos;
    pos += chunk;
  }
}

}  // namespace

// ---------------------------------------------------------------- against the reference

TEST(GateOptionsReference, ScoreGroupsHeadsFormsAndHard) {
  expect_reference(options_config("score", {{"groups", 2}}), 0);
  expect_reference(options_config("score", {{"heads", {1, 3}}}), 0);
  expect_reference(options_config("score", {{"groups", 2}, {"heads", {2, 3}}}), 0);
  expect_reference(options_config("score", {{"form", "multiplicative"}}), 0);
  expect_reference(options_config("score", {{"form", "multiplicative"}, {"source", "query_key"}, {"groups", 2}}), 0);
  expect_reference(options_config("score", {{"hard", true}, {"hard_threshold", 0.4}}), 0);
  expect_reference(options_config("score", {{"hard", true}, {"ramp_start", 0}, {"ramp_steps", 4}}), 2);
}

TEST(GateOptionsReference, RoutedRampBlendsInTheMixture) {
  expect_reference(options_config("routed", {{"ramp_steps", 4}}), 0);                     // r = 0: plain attention
  expect_reference(options_config("routed", {{"ramp_start", 1}, {"ramp_steps", 4}}), 2);  // r = 1/4
  expect_reference(options_config("routed", {{"ramp_steps", 4}, {"top_k", 2}}), 3);       // r = 3/4
  expect_gradcheck(options_config("routed", {{"ramp_steps", 4}}), 2);
}

TEST(GateOptionsReference, ScheduleNormAndRampAtAStep) {
  const nlohmann::json sched = {
      {"temperature", 2.0}, {"temperature_final", 0.5}, {"temperature_steps", 10}, {"input_norm", true}};
  expect_reference(options_config("score", sched), 4);
  expect_reference(options_config("score", sched), 25);  // past the schedule: τ = 0.5
  expect_reference(options_config("forget", sched, "gumbel_sigmoid"), 4);
  expect_reference(options_config("score", {{"ramp_start", 2}, {"ramp_steps", 4}}), 3);  // r = 1/4
  expect_reference(options_config("forget", {{"ramp_steps", 4}}), 1);
  expect_reference(options_config("forget", {{"groups", 2}, {"heads", {0, 1}}}), 0);
  expect_reference(options_config("forget", {{"hard", true}}), 0);
}

TEST(GateOptionsReference, OutputInputAndContextOptions) {
  expect_reference(options_config("output", {{"groups", 2}}), 0);
  expect_reference(options_config("output", {{"granularity", "headwise"}, {"heads", {0, 3}}}), 0);
  expect_reference(options_config("output", {{"groups", 2}, {"heads", {0, 1}}, {"hard", true}, {"ramp_steps", 3}}), 1);
  expect_reference(options_config("output", {}, "softplus"), 0);
  expect_reference(options_config("output", {{"granularity", "headwise"}}, "tanh_magnitude"), 0);
  expect_reference(options_config("input", {{"input_norm", true}}, "tanh_magnitude"), 0);
  expect_reference(options_config("input", {{"hard", true}, {"hard_threshold", 0.9}}, "softplus"), 0);
  expect_reference(options_config("context", {{"granularity", "headwise"}}), 0);
  expect_reference(options_config("context", {{"heads", {1, 2}}}), 0);
  expect_reference(options_config("context", {{"input_norm", true}}, "tanh_magnitude"), 0);
}

TEST(GateOptionsReference, PairSharedProjectionNormScheduleAndRamp) {
  expect_reference(options_config("pair", {{"shared_projection", true}}), 0);
  expect_reference(
      options_config(
          "pair", {{"input_norm", true}, {"temperature", 3.0}, {"temperature_final", 1.0}, {"temperature_steps", 6}}),
      3);
  expect_reference(options_config("pair", {{"ramp_start", 1}, {"ramp_steps", 4}, {"alpha_init", 0.9}}), 3);
  expect_reference(options_config("pair", {{"hard", true}, {"hard_threshold", 0.4}}), 0);
  expect_reference(options_config("pair", {{"groups", 2}}), 0);
  expect_reference(options_config("pair", {{"groups", 4}, {"shared_projection", true}}), 0);
  expect_reference(options_config("pair", {{"hard", true}, {"shared_projection", true}, {"ramp_steps", 2}}), 1);
  // heads: a per-head α, 0 on the heads without the gate; parameters for the listed heads only.
  expect_reference(options_config("pair", {{"heads", {1, 3}}}), 0);
  expect_reference(options_config("pair", {{"groups", 2}, {"heads", {2, 3}}, {"input_norm", true}}), 0);
  expect_reference(options_config("pair", {{"heads", {0}}, {"shared_projection", true}, {"ramp_steps", 4}}), 2);
  // softplus: M = α·softplus(u) + 1 − α; with hard, the threshold on the softplus value; dropout
  // (training only) leaves eval as it was.
  expect_reference(options_config("pair", {{"groups", 2}, {"temperature", 1.5}}, "softplus"), 0);
  expect_reference(options_config("pair", {{"hard", true}, {"hard_threshold", 0.9}}, "softplus"), 0);
  expect_reference(options_config("pair", {{"dropout", 0.4}, {"heads", {1, 2}}}, "softplus"), 0);
}

TEST(GateOptionsReference, PairHeadsParametersAndGeneration) {
  ModelConfig c = options_config("pair", {{"groups", 2}, {"heads", {0, 1}}});
  GPT model(c, 2);
  const auto params = model.named_parameters();
  for (const auto& [name, p] : params) {
    if (name.find(".gate.wq") != std::string::npos || name.find(".gate.wk") != std::string::npos) {
      EXPECT_EQ(p.shape(), (Shape{2, 2})) << name;  // two carried heads of two dims
    }
    if (name.find(".gate.bias") != std::string::npos) {
      EXPECT_EQ(p.shape(), (Shape{1})) << name;  // one group
    }
  }
  c.block_size = 9;
  expect_cache_equals_full_forward(c, 0);
  ModelConfig one = options_config("pair", {{"heads", {3}}, {"hard", true}});
  one.block_size = 9;
  expect_cache_equals_full_forward(one, 0);
  ModelConfig soft = options_config("pair", {{"dropout", 0.3}}, "softplus");
  soft.block_size = 9;
  expect_cache_equals_full_forward(soft, 0);
}

TEST(GateOptionsReference, SeveralGatesWithOptions) {
  ModelConfig c = options_config("none", {});
  c.gates = {
      models::gate_from_json({{"kind", "score"}, {"form", "multiplicative"}, {"groups", 2}}, "model.gates[0]", true),
      models::gate_from_json({{"kind", "pair"}, {"shared_projection", true}}, "model.gates[1]", true),
      models::gate_from_json({{"kind", "output"}, {"granularity", "headwise"}, {"heads", {1, 2}}}, "model.gates[2]",
                             true)};
  c.validate();
  expect_reference(c, 0);
}

TEST(GateOptionsReference, KvCacheEqualsTheFullForwardAtTheModelsStep) {
  // Generation runs the options in eval at the model's step: a multiplicative score gate's scaled k
  // is what the cache holds, the forget gate's hard prefix sums continue across chunks, the pair
  // and output ramps stand where the step puts them.
  ModelConfig c = options_config("none", {});
  c.block_size = 9;
  c.gates = {
      models::gate_from_json({{"kind", "score"}, {"form", "multiplicative"}, {"source", "query_key"}, {"groups", 2}},
                             "model.gates[0]", true),
      models::gate_from_json({{"kind", "forget"}, {"hard", true}, {"hard_threshold", 0.6}, {"heads", {0, 3}}},
                             "model.gates[1]", true),
      models::gate_from_json({{"kind", "pair"}, {"shared_projection", true}, {"ramp_steps", 4}, {"hard", true}},
                             "model.gates[2]", true),
      models::gate_from_json({{"kind", "output"},
                              {"activation", "tanh_magnitude"},
                              {"temperature", 2.0},
                              {"temperature_final", 1.0},
                              {"temperature_steps", 4}},
                             "model.gates[3]", true)};
  c.validate();
  expect_cache_equals_full_forward(c, 2);
}

TEST(GateOptionsCache, RoutedRampEqualsTheFullForward) {
  for (std::int64_t step : {0, 2, 9}) {  // r = 0, 1/2 and 1
    ModelConfig c = options_config("routed", {{"ramp_steps", 4}, {"windows", {0, 2}}});
    c.block_size = 9;
    expect_cache_equals_full_forward(c, step);
  }
}

// ---------------------------------------------------------------- gradients

TEST(GateOptionsGrad, LogitGatesWithGroupsHeadsNormScheduleAndRamp) {
  const nlohmann::json common = {{"input_norm", true},     {"temperature", 1.5}, {"temperature_final", 0.7},
                                 {"temperature_steps", 8}, {"ramp_start", 1},    {"ramp_steps", 4}};
  nlohmann::json score = common;
  score["groups"] = 2;
  score["heads"] = {0, 1};
  expect_gradcheck(options_config("score", score), 3);
  nlohmann::json forget = common;
  forget["groups"] = 2;
  expect_gradcheck(options_config("forget", forget), 3);
  expect_gradcheck(options_config("score", {{"form", "multiplicative"}, {"source", "query_key"}, {"heads", {0, 2}}}),
                   0);
}

TEST(GateOptionsGrad, MultiplyingGatesWithActivationsAndDropout) {
  expect_gradcheck(options_config("output", {{"granularity", "headwise"}, {"groups", 2}, {"dropout", 0.3}}, "softplus"),
                   0);
  expect_gradcheck(options_config("output", {{"heads", {1, 3}}, {"ramp_steps", 5}}, "tanh_magnitude"), 2);
  expect_gradcheck(options_config("input", {{"input_norm", true}, {"dropout", 0.25}}, "tanh_magnitude"), 0);
  expect_gradcheck(options_config("context", {{"granularity", "headwise"}, {"heads", {0, 3}}, {"dropout", 0.4}}), 0);
}

TEST(GateOptionsGrad, PairSharedProjectionNormAndRamp) {
  expect_gradcheck(options_config("pair", {{"groups", 2}, {"input_norm", true}}), 0);
  expect_gradcheck(options_config("pair", {{"heads", {0, 2}}, {"input_norm", true}}), 0);
  expect_gradcheck(options_config("pair", {{"groups", 2}, {"heads", {2, 3}}, {"ramp_steps", 3}}), 1);
  expect_gradcheck(options_config("pair", {{"shared_projection", true},
                                           {"input_norm", true},
                                           {"ramp_steps", 4},
                                           {"temperature", 2.0},
                                           {"temperature_final", 1.0},
                                           {"temperature_steps", 4}}),
                   2);
  // softplus and dropout: the fused kernels' terms, with gate_l1's Σ G in the objective.
  expect_gradcheck(options_config("pair", {{"dropout", 0.3}}, "softplus"), 0);
  expect_gradcheck(options_config("pair", {{"dropout", 0.5}, {"heads", {2, 3}}, {"groups", 2}}), 0);
}

// ---------------------------------------------------------------- neutral identities

TEST(GateOptionsNeutral, DefaultsSpelledOutAreBitwiseTheDefault) {
  for (const std::string kind : {"score", "forget", "output", "context", "pair", "input"}) {
    ModelConfig plain = options_config(kind, {});
    nlohmann::json spelled = {{"temperature_final", 1.0}, {"temperature_steps", 10}, {"ramp_start", 0},
                              {"ramp_steps", 0},          {"dropout", 0.0},          {"input_norm", false}};
    spelled["hard"] = false;
    if (kind != "input") spelled["heads"] = {0, 1, 2, 3};
    if (kind == "score" || kind == "forget" || kind == "output" || kind == "pair") spelled["groups"] = 1;
    ModelConfig same = options_config(kind, spelled);
    GPT a(plain, 4), b(same, 4);
    EXPECT_TRUE(bitwise_equal(eval_logits(a, 3), eval_logits(b, 3))) << kind;
  }
}

TEST(GateOptionsNeutral, ARampThatIsOverIsNoRamp) {
  for (const std::string kind : {"score", "forget", "output", "pair"}) {
    GPT a(options_config(kind, {}), 4), b(options_config(kind, {{"ramp_start", 2}, {"ramp_steps", 3}}), 4);
    test::perturb_gate_parameters(a, 1);
    test::perturb_gate_parameters(b, 1);
    EXPECT_TRUE(bitwise_equal(eval_logits(a, 5), eval_logits(b, 5))) << kind;
    EXPECT_FALSE(bitwise_equal(eval_logits(a, 3), eval_logits(b, 3))) << kind << ": mid-ramp should differ";
  }
}

TEST(GateOptionsNeutral, BeforeTheRampTheModelIsTheBaseline) {
  for (const std::string kind : {"score", "forget", "output", "pair", "input", "context"}) {
    ModelConfig gated = options_config(kind, {{"ramp_start", 4}, {"ramp_steps", 2}});
    ModelConfig base = gated;
    base.gate.kind = "none";
    GPT a(base, 1), b(gated, 2);
    test::copy_shared_parameters(a, b);
    test::perturb_gate_parameters(b, 3);
    EXPECT_TRUE(test::all_close(eval_logits(a, 4), eval_logits(b, 4), 1e-12, 1e-12)) << kind;
  }
}

TEST(GateOptionsNeutral, GroupsEqualPerHeadGatesWithTiedRows) {
  // A grouped gate is the per-head gate whose heads of a group share their weight row and bias.
  for (const std::string kind : {"score", "forget", "output"}) {
    ModelConfig grouped = options_config(kind, {{"groups", 2}}), per_head = options_config(kind, {});
    GPT g(grouped, 1), p(per_head, 1);
    test::perturb_gate_parameters(g, 2);
    test::copy_shared_parameters(g, p);
    const std::int64_t rows_per_unit = kind == "output" ? 2 : 1;  // output: d rows per head
    for (const std::string name : {"weight", "bias"})
      for (std::int64_t l = 0; l < 2; ++l) {
        const std::string full = "blocks." + std::to_string(l) + ".attn.gate." + name;
        const Tensor src = g.parameter(full);
        std::vector<double> v = src.to_vector(), out;
        const std::int64_t row = src.numel() / src.size(0);
        for (std::int64_t h = 0; h < 4; ++h)
          for (std::int64_t r = 0; r < rows_per_unit; ++r) {
            const std::int64_t at = ((h / 2) * rows_per_unit + r) * row;
            out.insert(out.end(), v.begin() + at, v.begin() + at + row);
          }
        p.parameter(full).copy_from(Tensor::from(out, p.parameter(full).shape(), DType::f64));
      }
    EXPECT_TRUE(test::all_close(eval_logits(g, 0), eval_logits(p, 0), 1e-12, 1e-12)) << kind;
  }
}

TEST(GateOptionsNeutral, DropoutAndTheNoiseStreamOnlyWhileTraining) {
  GPT a(options_config("output", {}), 4), b(options_config("output", {{"dropout", 0.5}}), 4);
  EXPECT_TRUE(bitwise_equal(eval_logits(a, 0), eval_logits(b, 0)));
  const GeneratorState before = b.noise_generator().state();
  eval_logits(b, 0);
  EXPECT_EQ(b.noise_generator().state().offset, before.offset) << "eval drew dropout noise";
}

// ---------------------------------------------------------------- hard gates and dropout

TEST(GateOptionsHard, ForwardIsTheThresholdBackwardTheSoftGradient) {
  ModelConfig c = options_config("output", {{"hard", true}, {"hard_threshold", 0.45}});
  const models::GateOptions o = models::GateOptions::of(c.gate);
  Tensor z = Tensor::from({-2.0, -0.3, 0.0, 0.1, 3.0}, {5}, DType::f64);
  z.set_requires_grad(true);
  models::AttentionContext ctx;
  models::GateEffect e = models::value_effect(models::activate_gate(z, c.gate, o, ctx), o, ctx);
  EXPECT_EQ(e.value.to_vector(), (std::vector<double>{0, 0, 1, 1, 1}));  // σ: 0.12, 0.43, 0.5, 0.52, 0.95
  const Tensor w = Tensor::from({1.0, 2.0, 3.0, 4.0, 5.0}, {5}, DType::f64);
  ops::sum(e.value * w).backward();
  const std::vector<double> zv = z.detach().to_vector(), gz = z.grad().to_vector();
  for (std::size_t i = 0; i < zv.size(); ++i) {
    const double s = 1.0 / (1.0 + std::exp(-zv[i]));
    EXPECT_NEAR(gz[i], w.at(static_cast<std::int64_t>(i)) * s * (1 - s), 1e-15) << i;
  }
  // The logit form: 0 where open, −30 where closed, and log σ's gradient.
  z.zero_grad();
  models::GateEffect l = models::log_effect(models::activate_gate(z, c.gate, o, ctx), o, ctx);
  EXPECT_EQ(l.log_value.to_vector(), (std::vector<double>{-30, -30, 0, 0, 0}));
  ops::sum(l.log_value).backward();
  const std::vector<double> gl = z.grad().to_vector();
  for (std::size_t i = 0; i < zv.size(); ++i) EXPECT_NEAR(gl[i], 1.0 / (1.0 + std::exp(zv[i])), 1e-15) << i;
}

TEST(GateOptionsDropout, DropsTheRightShareAndFollowsTheNoiseStream) {
  ModelConfig c = options_config("output", {{"dropout", 0.3}});
  const models::GateOptions o = models::GateOptions::of(c.gate);
  Generator noise(9, 1);
  models::AttentionContext ctx;
  ctx.training = true;
  ctx.noise = &noise;
  Tensor z = Tensor::full({40000}, -1.0, DType::f64);  // σ(−1) ≈ 0.27: a dropped value reads 1
  const std::vector<double> v =
      models::value_effect(models::activate_gate(z, c.gate, o, ctx), o, ctx).value.to_vector();
  double dropped = 0;
  for (double x : v) dropped += x == 1.0;
  EXPECT_NEAR(dropped / static_cast<double>(v.size()), 0.3, 0.01);
  Generator again(9, 1);
  ctx.noise = &again;
  EXPECT_EQ(models::value_effect(models::activate_gate(z, c.gate, o, ctx), o, ctx).value.to_vector(), v);
  ctx.noise = nullptr;
  EXPECT_THROW(models::value_effect(models::activate_gate(z, c.gate, o, ctx), o, ctx), ValueError);
}

// ---------------------------------------------------------------- statistics and regulariser

TEST(GateOptionsStats, PerHeadMomentsFollowGroupsAndHeads) {
  ModelConfig c = options_config("score", {{"groups", 2}, {"heads", {2, 3}}});
  GPT model(c, 1);
  test::perturb_gate_parameters(model, 2);
  model.eval();
  models::ForwardOptions fo;
  fo.collect_stats = true;
  NoGradGuard no_grad;
  models::ForwardResult r = model.forward(test::tokens(2, 6, c.vocab_size, 3), Tensor(), fo);
  for (const models::LayerStats& s : r.stats) {
    ASSERT_EQ(s.gate_by_head.size(), 4u);
    EXPECT_EQ(s.gate_by_head[0].count, 0);
    EXPECT_EQ(s.gate_by_head[1].count, 0);
    EXPECT_EQ(s.gate_by_head[2].count, 12);  // B·T values of the one unit
    EXPECT_EQ(s.gate_by_head[3].sum, s.gate_by_head[2].sum);
    EXPECT_EQ(s.gate.count, 12);
    EXPECT_NEAR(s.gate.mean(), s.gate_by_head[2].mean(), 1e-15);
  }
  // A per-head gate reports every head; the output gate's d values per head go to that head.
  ModelConfig o = options_config("output", {});
  GPT out(o, 1);
  models::ForwardResult ro = out.forward(test::tokens(2, 6, o.vocab_size, 3), Tensor(), fo);
  for (const models::LayerStats& s : ro.stats) {
    ASSERT_EQ(s.gate_by_head.size(), 4u);
    for (const ops::GateMoments& m : s.gate_by_head) EXPECT_EQ(m.count, 24);  // B·T·d
  }
}

TEST(GateOptionsStats, PairGateReportsPerHeadAndOnlyItsHeads) {
  // The pair gate's G lives inside the fused op, which now returns its moments per head: the
  // per-head view has them, and with `heads` only the listed heads count, pooled and per head.
  models::ForwardOptions fo;
  fo.collect_stats = true;
  NoGradGuard no_grad;
  const std::int64_t B = 2, T = 6, pairs = B * T * (T + 1) / 2;  // visible (query, key) pairs per head
  for (const bool subset : {false, true}) {
    SCOPED_TRACE(subset ? "heads [1, 3]" : "every head");
    ModelConfig c = options_config("pair", subset ? nlohmann::json{{"heads", {1, 3}}} : nlohmann::json::object());
    GPT model(c, 1);
    test::perturb_gate_parameters(model, 2);
    model.eval();
    models::ForwardResult r = model.forward(test::tokens(B, T, c.vocab_size, 3), Tensor(), fo);
    for (const models::LayerStats& s : r.stats) {
      ASSERT_EQ(s.gate_by_head.size(), 4u);
      ops::GateMoments pooled;
      for (std::int64_t h = 0; h < 4; ++h) {
        const bool carried = !subset || h % 2 == 1;
        EXPECT_EQ(s.gate_by_head[static_cast<std::size_t>(h)].count, carried ? pairs : 0) << "head " << h;
        pooled.merge(s.gate_by_head[static_cast<std::size_t>(h)]);
      }
      EXPECT_EQ(s.gate.count, pooled.count);
      EXPECT_NEAR(s.gate.mean(), pooled.mean(), 1e-12);
      EXPECT_NE(s.gate_by_head[1].mean(), s.gate_by_head[3].mean());
    }
  }
}

TEST(GateOptionsNeutral, PairDropoutOnlyWhileTrainingAndFromTheNoiseStream) {
  // Eval: bitwise the gate without dropout, no noise drawn. Training: a mask from the model's noise
  // stream, so the same stream gives the same loss, and a dropped share changes it.
  GPT a(options_config("pair", {}), 4), b(options_config("pair", {{"dropout", 0.5}}), 4);
  test::perturb_gate_parameters(a, 5);
  test::perturb_gate_parameters(b, 5);
  EXPECT_TRUE(bitwise_equal(eval_logits(a, 0), eval_logits(b, 0)));
  const GeneratorState before = b.noise_generator().state();
  eval_logits(b, 0);
  EXPECT_EQ(b.noise_generator().state().offset, before.offset) << "eval drew dropout noise";
  const std::int64_t V = options_config("pair", {}).vocab_size;
  const Tensor idx = test::tokens(2, 6, V, 3), targets = test::tokens(2, 6, V, 4);
  NoGradGuard no_grad;
  a.train();
  b.train();
  const double plain = a.forward(idx, targets).loss.item();
  const double dropped = b.forward(idx, targets).loss.item();
  EXPECT_GT(b.noise_generator().state().offset, before.offset);
  EXPECT_NE(plain, dropped);
  GPT c(options_config("pair", {{"dropout", 0.5}}), 4);
  test::perturb_gate_parameters(c, 5);
  c.train();
  EXPECT_EQ(c.forward(idx, targets).loss.item(), dropped);
}

namespace {
// The mean of every gate value an inspecting forward reported, over its layers (NaN without any,
// which no EXPECT_NEAR passes).
double mean_inspected_gate(const models::ForwardResult& r) {
  double sum = 0, n = 0;
  for (const models::LayerInspection& li : r.inspection) {
    for (double v : li.gate_values) sum += v;
    n += static_cast<double>(li.gate_values.size());
  }
  return n > 0 ? sum / n : std::nan("");
}
}  // namespace

TEST(GateOptionsRegularizer, PairGateL1IsTheMeanOfItsG) {
  // The fused op's Σ G over the visible pairs of the carried heads, over their count: exactly the
  // mean of the values inspection computes, σ or softplus; with `heads`, the listed heads only.
  models::ForwardOptions fo;
  fo.regularizers = {models::kGateL1};
  fo.inspect = true;
  NoGradGuard no_grad;
  const Tensor idx = test::tokens(2, 6, 5, 3);
  for (const std::string activation : {"sigmoid", "softplus"})
    for (const bool subset : {false, true}) {
      SCOPED_TRACE(activation + (subset ? " heads [0, 2]" : ""));
      ModelConfig c =
          options_config("pair", subset ? nlohmann::json{{"heads", {0, 2}}} : nlohmann::json::object(), activation);
      c.n_layer = 1;
      GPT model(c, 1);
      test::perturb_gate_parameters(model, 2);
      model.eval();
      models::ForwardResult r = model.forward(idx, Tensor(), fo);
      EXPECT_NEAR(r.regularizer(models::kGateL1).item(), mean_inspected_gate(r), 1e-12);
    }
}

// ---------------------------------------------------------------- softplus on the score gate

// log softplus(u) = log log(1 + eᵘ) in long double, the reference far into both tails.
double ref_log_softplus(double u) {
  return static_cast<double>(std::log(std::log1p(std::exp(static_cast<long double>(u)))));
}

TEST(GateOptionsSoftplus, LogSoftplusIsExactAndFiniteInBothTails) {
  const std::vector<double> us = {-1e4, -1000, -745, -200, -30, -20.5, -20, -19.5, -5, -0.3, 0, 2, 40, 1000};
  for (DType dt : {DType::f64, DType::f32}) {
    Tensor u = Tensor::from(us, {static_cast<std::int64_t>(us.size())}, dt).set_requires_grad(true);
    Tensor l = models::log_softplus(u);
    ops::sum(l).backward();
    const std::vector<double> got = l.to_vector(), grad = u.grad().to_vector();
    for (std::size_t i = 0; i < us.size(); ++i) {
      const double tol = (dt == DType::f64 ? 2e-15 : 2e-6) * std::max(1.0, std::abs(us[i]));  // a few ulps
      EXPECT_NEAR(got[i], ref_log_softplus(us[i]), tol) << "u " << us[i] << " " << dtype_name(dt);
      // d/du log softplus(u) = σ(u)/softplus(u): 1 − eᵘ/2 far below, 1/u far above; never NaN.
      const long double e = std::exp(static_cast<long double>(us[i]));
      const double want = static_cast<double>(e / (1 + e) / std::log1p(e));
      EXPECT_TRUE(std::isfinite(grad[i])) << us[i];
      EXPECT_NEAR(grad[i], want, dt == DType::f64 ? 1e-15 : 1e-6) << "u " << us[i] << " " << dtype_name(dt);
    }
  }
}

TEST(GateOptionsSoftplus, LogSoftplusGradcheck) {
  auto f = [](const std::vector<Tensor>& in) { return models::log_softplus(in[0]); };
  EXPECT_TRUE(test::grads_ok(f, {test::rand({3, 7}, 41, -6.0, 6.0)}));
  EXPECT_TRUE(test::grads_ok(f, {test::rand({2, 9}, 42, -40.0, 30.0)}));  // the tail branch too (not at −20)
}

TEST(GateOptionsSoftplus, ScoreGateMatchesTheReference) {
  // S_ij += log softplus(u_j) (additive; a key above softplus⁻¹(1) = 0.5413 is boosted), S_ij·softplus(u_j)
  // (multiplicative), with the options that compose with the log term.
  expect_reference(options_config("score", {}, "softplus"), 0);
  expect_reference(options_config("score", {{"groups", 2}, {"heads", {2, 3}}}, "softplus"), 0);
  expect_reference(options_config("score", {{"form", "multiplicative"}}, "softplus"), 0);
  expect_reference(options_config("score", {{"form", "multiplicative"}, {"source", "query_key"}}, "softplus"), 0);
  expect_reference(options_config("score", {{"hard", true}, {"hard_threshold", 0.8}}, "softplus"), 0);
  expect_reference(options_config("score", {{"ramp_start", 1}, {"ramp_steps", 4}}, "softplus"), 3);  // r = 1/2
  expect_reference(options_config("score", {{"temperature", 2.0}, {"input_norm", true}}, "softplus"), 0);
}

TEST(GateOptionsSoftplus, ScoreGateBoostsAKeyAndReportsSoftplusValues) {
  // A bias of 3: every g = softplus(≈3) ≈ 3.05 > 1, so log g > 0 raises the keys' logits, unlike a σ.
  ModelConfig c = options_config("score", {}, "softplus");
  c.n_layer = 1;
  c.gate.init_bias = 3.0;
  GPT model(c, 1);
  model.eval();
  models::ForwardOptions fo;
  fo.collect_stats = true;
  NoGradGuard no_grad;
  const models::ForwardResult r = model.forward(test::tokens(2, 6, c.vocab_size, 3), Tensor(), fo);
  ASSERT_EQ(r.stats.size(), 1u);
  EXPECT_GT(r.stats[0].gate.mean(), 2.9);
  EXPECT_LT(r.stats[0].gate.mean(), 3.2);
}

TEST(GateOptionsSoftplus, ScoreGateGradcheck) {
  expect_gradcheck(options_config("score", {{"groups", 2}}, "softplus"), 0);
  expect_gradcheck(options_config("score", {{"ramp_start", 1}, {"ramp_steps", 4}, {"dropout", 0.3}}, "softplus"), 3);
  expect_gradcheck(options_config("score", {{"form", "multiplicative"}, {"heads", {0, 2}}}, "softplus"), 0);
}

TEST(GateOptionsSoftplus, ScoreGateKvCacheEqualsTheFullForward) {
  for (const nlohmann::json& options :
       {nlohmann::json::object(), nlohmann::json{{"hard", true}, {"hard_threshold", 0.7}},
        nlohmann::json{{"form", "multiplicative"}, {"groups", 2}}}) {
    ModelConfig c = options_config("score", options, "softplus");
    c.block_size = 9;
    expect_cache_equals_full_forward(c, 0);
  }
}

TEST(GateOptionsRegularizer, GateL1IsTheMeanSoftGate) {
  models::ForwardOptions fo;
  fo.regularizers = {models::kGateL1};
  fo.inspect = true;
  NoGradGuard no_grad;
  const Tensor idx = test::tokens(2, 6, 5, 3);
  // One block, so the hard gate cannot change what a later gate reads.
  auto one_block = [](ModelConfig c) {
    c.n_layer = 1;
    return c;
  };
  // Without hard, the regulariser is exactly the mean of the reported gate values.
  GPT soft(one_block(options_config("output", {})), 1);
  test::perturb_gate_parameters(soft, 2);
  soft.eval();
  models::ForwardResult rs = soft.forward(idx, Tensor(), fo);
  EXPECT_NEAR(rs.regularizer(models::kGateL1).item(), mean_inspected_gate(rs), 1e-12);
  // A hard gate applies 0/1; its penalty stays on the soft values behind them (the same weights).
  GPT hard(one_block(options_config("output", {{"hard", true}})), 1);
  test::perturb_gate_parameters(hard, 2);
  hard.eval();
  models::ForwardResult rh = hard.forward(idx, Tensor(), fo);
  for (const models::LayerInspection& li : rh.inspection)
    for (double v : li.gate_values) EXPECT_TRUE(v == 0.0 || v == 1.0) << v;
  EXPECT_NEAR(rh.regularizer(models::kGateL1).item(), rs.regularizer(models::kGateL1).item(), 1e-12);
}

}  // namespace gattn
