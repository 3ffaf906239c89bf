// Several gates in one block (`model.gates`): parameter names, the fused model against the
// composed T×T reference for every pair of kinds and for all kinds at once, gradients, the KV cache,
// inspection, pooled statistics, and the router learning at top_k 1.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "framework/optim/adamw.h"
#include "gate_reference.h"
#include "model_test_util.h"
#include "models/gating/registry.h"
#include "models/gpt.h"
#include "models/kv_cache.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "test_util.h"

namespace gattn {

using models::GateConfig;
using models::GPT;
using models::ModelConfig;

namespace {

GateConfig entry(const std::string& kind, std::vector<std::int64_t> layers = {}) {
  GateConfig g;
  g.kind = kind;
  g.where = "model.gates[" + kind + "]";
  g.all_layers = layers.empty();
  g.layers = std::move(layers);
  g.init_bias = 0.4;
  return g;
}

// A tiny model with the given gates in every block (routed: 3 experts, top-2 unless told).
ModelConfig combined(const std::vector<std::string>& kinds, std::int64_t top_k = 2) {
  ModelConfig c = test::tiny_config("none");
  for (const std::string& k : kinds) {
    GateConfig g = entry(k);
    g.options["windows"] = {0, 2, 3};
    g.options["top_k"] = top_k;
    c.gates.push_back(g);
  }
  return c;
}

std::vector<std::string> registered_kinds() {
  std::vector<std::string> out;
  for (const models::GateKindSpec* k : models::gate_kinds()) out.push_back(k->name);
  return out;
}

std::string joined(const std::vector<std::string>& kinds) {
  std::string s;
  for (const std::string& k : kinds) s += (s.empty() ? "" : "+") + k;
  return s;
}

}  // namespace

TEST(GateComposition, ParameterNamesOfSeveralGates) {
  ModelConfig c = test::tiny_config("none");
  c.gates = {entry("output", {1}), entry("score")};
  GPT model(c, 0);
  // Block 0 has one gate: the plain names. Block 1 has two: each under its kind.
  EXPECT_EQ(model.parameter("blocks.0.attn.gate.weight").shape(), (Shape{2, 4}));
  EXPECT_EQ(model.parameter("blocks.1.attn.gate.score.weight").shape(), (Shape{2, 4}));
  EXPECT_EQ(model.parameter("blocks.1.attn.gate.output.weight").shape(), (Shape{4, 4}));
  EXPECT_EQ(model.parameter("blocks.1.attn.gate.output.bias").shape(), (Shape{4}));
  EXPECT_THROW(model.parameter("blocks.1.attn.gate.weight"), ValueError);
  // The router keeps attn.router. beside other gates; the other gate of a two-gate block goes under
  // its kind.
  ModelConfig r = combined({"routed", "pair"});
  GPT routed(r, 0);
  EXPECT_EQ(routed.parameter("blocks.0.attn.router.weight").shape(), (Shape{3, 4}));
  EXPECT_EQ(routed.parameter("blocks.0.attn.gate.pair.alpha").shape(), (Shape{1}));
  EXPECT_THROW(routed.parameter("blocks.0.attn.gate.alpha"), ValueError);
  for (const std::vector<std::string>& kinds : {std::vector<std::string>{"output", "score"}, registered_kinds()}) {
    ModelConfig all = combined(kinds);
    GPT m(all, 0);
    std::map<std::string, Shape> got;
    for (auto& [name, p] : m.named_parameters()) got[name] = p.shape();
    EXPECT_EQ(got, test::spec_parameters(all)) << joined(kinds);
  }
}

TEST(GateComposition, EveryPairOfKindsMatchesTheComposedReference) {
  const std::vector<std::string> kinds = registered_kinds();
  for (std::size_t a = 0; a < kinds.size(); ++a)
    for (std::size_t b = a + 1; b < kinds.size(); ++b) {
      SCOPED_TRACE(kinds[a] + "+" + kinds[b]);
      test::expect_matches_reference(combined({kinds[a], kinds[b]}));
    }
}

TEST(GateComposition, AllKindsInOneBlockMatchTheComposedReference) {
  for (std::int64_t top_k : {1, 2}) {
    SCOPED_TRACE("top_k " + std::to_string(top_k));
    test::expect_matches_reference(combined(registered_kinds(), top_k));
  }
  // Different gates in different blocks.
  ModelConfig c = test::tiny_config("none");
  c.gates = {entry("forget", {0}), entry("pair", {1}), entry("output")};
  test::expect_matches_reference(c);
}

TEST(GateComposition, GradientsOfCombinations) {
  // Every parameter's gradient against central differences, through all kinds at once and through
  // the fused terms together (column + row biases + modulation in one call).
  for (const std::vector<std::string>& kinds :
       {registered_kinds(), std::vector<std::string>{"score", "forget", "pair"}}) {
    ModelConfig c = combined(kinds);
    c.n_layer = 1;
    GPT model(c, 4);
    test::perturb_gate_parameters(model, 9);
    model.eval();
    Tensor idx = test::tokens(1, 5, c.vocab_size, 2), targets = test::tokens(1, 5, c.vocab_size, 3);
    EXPECT_TRUE(test::model_grads_ok(model, [&] { return model.forward(idx, targets).loss; })) << joined(kinds);
  }
}

TEST(GateComposition, KvCacheEqualsTheFullForward) {
  for (const std::vector<std::string>& kinds : {registered_kinds(), std::vector<std::string>{"score", "forget"},
                                                std::vector<std::string>{"forget", "routed"}}) {
    for (std::int64_t top_k : {1, 2}) {
      ModelConfig c = combined(kinds, top_k);
      c.block_size = 9;
      GPT model(c, 3);
      test::perturb_gate_parameters(model, 11);
      model.eval();
      const std::int64_t B = 2, T = 9;
      Tensor idx = test::tokens(B, T, c.vocab_size, 5);
      Tensor full;
      {
        NoGradGuard no_grad;
        full = model.forward(idx).logits;
      }
      // Twice through one cache: the second sequence must not see the first one's summed terms.
      models::KVCache cache(c, B);
      for (int round = 0; round < 2; ++round) {
        cache.clear();
        std::int64_t pos = 0;
        for (std::int64_t chunk : {3, 1, 2, 1, 2}) {
          Tensor logits = model.forward_cached(ops::slice(idx, 1, pos, pos + chunk), cache);
          EXPECT_TRUE(test::all_close(logits, ops::slice(full, 1, pos, pos + chunk), 1e-11, 1e-9))
              << joined(kinds) << " top_k " << top_k << " round " << round << " at " << pos;
          pos += chunk;
        }
      }
    }
  }
}

TEST(GateComposition, StatisticsPoolEveryGateOfTheLayer) {
  const std::int64_t B = 2, T = 5, H = 2, d = 2;
  ModelConfig c = combined({"score", "context", "output"});
  GPT model(c, 0);
  models::ForwardOptions opt;
  opt.collect_stats = true;
  opt.regularizers = {"gate_entropy"};
  auto r = model.forward(test::tokens(B, T, 5, 1), Tensor(), opt);
  // score: H per token, context: H·d per token, output: H·d per token.
  EXPECT_EQ(r.stats[0].gate.count, B * T * (H + 2 * H * d));
  EXPECT_TRUE(r.regularizer("gate_entropy").defined());
  model.eval();
  opt.inspect = true;
  auto ins = model.forward(test::tokens(B, T, 5, 1), Tensor(), opt);
  EXPECT_EQ(static_cast<std::int64_t>(ins.inspection[0].gate_values.size()), B * T * (H + 2 * H * d));
  EXPECT_EQ(ins.inspection[0].gate_by_token.size(), static_cast<std::size_t>(T));
  EXPECT_EQ(ins.inspection[0].gate_by_token_sources, 3);
  // Attention rows of the inspection still sum to 1 (no modulation here).
  const std::vector<double>& A = ins.inspection[0].attention;
  for (std::int64_t i = 0; i < T; ++i) {
    double row = 0;
    for (std::int64_t j = 0; j < T; ++j) row += A[static_cast<std::size_t>(i * T + j)];
    EXPECT_NEAR(row, 1.0, 1e-9);
  }
}

TEST(GateComposition, RouterGetsAGradientAtTopOne) {
  // Renormalising one selected probability would give r̃ = 1 and no gradient: the router must learn
  // from the loss alone.
  ModelConfig c = test::tiny_config("routed");
  c.gate.options["windows"] = {0, 2};
  c.gate.options["top_k"] = 1;
  GPT model(c, 2);
  test::perturb_gate_parameters(model, 4);
  Tensor idx = test::tokens(2, 6, c.vocab_size, 1), targets = test::tokens(2, 6, c.vocab_size, 2);
  model.forward(idx, targets).loss.backward();
  double norm = 0;
  for (double g : model.parameter("blocks.0.attn.router.weight").grad().to_vector()) norm += g * g;
  EXPECT_GT(std::sqrt(norm), 1e-6);
  // And the weights move under the loss alone (no balance loss).
  const std::vector<double> before = model.parameter("blocks.0.attn.router.weight").to_vector();
  optim::AdamWOptions options;
  options.lr = 1e-2;
  options.weight_decay = 0;  // only the loss moves the weights
  options.schedule.kind = "constant";
  options.schedule.max_steps = 3;
  optim::AdamW opt(model.named_parameters(), options);
  for (int step = 0; step < 3; ++step) {
    opt.zero_grad();
    model.forward(idx, targets).loss.backward();
    opt.step(step);
  }
  const std::vector<double> after = model.parameter("blocks.0.attn.router.weight").to_vector();
  double moved = 0;
  for (std::size_t i = 0; i < before.size(); ++i) moved = std::max(moved, std::abs(after[i] - before[i]));
  EXPECT_GT(moved, 1e-5);
}

TEST(GateComposition, OneMixtureAndOneGateOfEachKindPerBlock) {
  ModelConfig c = test::tiny_config("none");
  c.gates = {entry("output"), entry("output", {1})};
  const std::string err = test::error_of([&] { c.validate(); });
  EXPECT_NE(err.find("already has a 'output' gate"), std::string::npos) << err;
  c.gates = {entry("output", {0}), entry("output", {1})};  // the same kind in different blocks is fine
  EXPECT_NO_THROW(c.validate());
  c.gate.kind = "score";
  EXPECT_NE(test::error_of([&] { c.validate(); }).find("model.gate"), std::string::npos);
}

}  // namespace gattn
