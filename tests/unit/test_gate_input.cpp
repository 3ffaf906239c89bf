// Gate kind `input`: q, k, v projected from h ⊙ σ(h·Wᵀ + b). Its parameters, the math against the
// composed reference (alone and with the output gate: the four-group ablation's "both"), a fully
// open gate equal to the baseline, its statistics, gradients and the KV cache.
#include <gtest/gtest.h>

#include "core/autograd/grad_mode.h"
#include "gate_reference.h"
#include "model_test_util.h"
#include "models/gpt.h"
#include "models/kv_cache.h"
#include "ops/shape.h"
#include "test_util.h"

namespace gattn {

using models::GPT;
using models::ModelConfig;

TEST(GateInput, ParametersAndInitialValues) {
  ModelConfig c = test::tiny_config("input");
  GPT model(c, 0);
  EXPECT_EQ(model.parameter("blocks.0.attn.gate.weight").shape(), (Shape{4, 4}));
  EXPECT_EQ(model.parameter("blocks.1.attn.gate.bias").shape(), (Shape{4}));
  for (double b : model.parameter("blocks.0.attn.gate.bias").to_vector()) EXPECT_EQ(b, 0.0);
  c.gates = {c.gate, c.gate};
  c.gate.kind = "none";
  c.gates[1].kind = "output";
  GPT both(c, 0);
  EXPECT_EQ(both.parameter("blocks.0.attn.gate.input.weight").shape(), (Shape{4, 4}));
  EXPECT_EQ(both.parameter("blocks.0.attn.gate.output.weight").shape(), (Shape{4, 4}));
}

TEST(GateInput, MatchesTheReferenceAloneAndWithTheOutputGate) {
  ModelConfig c = test::tiny_config("input");
  c.gate.init_bias = 0.7;
  test::expect_matches_reference(c);
  c.gate.activation = "gumbel_sigmoid";  // eval: σ(z/τ)
  c.gate.temperature = 0.5;
  test::expect_matches_reference(c);
  ModelConfig both = test::tiny_config("none");
  models::GateConfig in, out;
  in.kind = "input";
  out.kind = "output";
  out.layers = {1};
  out.all_layers = false;
  both.gates = {out, in};  // listed in any order, applied input first
  test::expect_matches_reference(both);
}

TEST(GateInput, FullyOpenIsTheBaseline) {
  ModelConfig gated = test::tiny_config("input", DType::f32);
  gated.gate.init_bias = 40;  // σ(40) = 1 − 4e-18
  gated.gate.init_weight = "zero";
  ModelConfig base = gated;
  base.gate.kind = "none";
  GPT a(base, 1), b(gated, 2);
  test::copy_shared_parameters(a, b);
  Tensor idx = test::tokens(3, 6, gated.vocab_size, 9);
  EXPECT_TRUE(test::all_close(a.forward(idx).logits, b.forward(idx).logits, 1e-6, 0));
}

TEST(GateInput, StatisticsCountEveryChannel) {
  const std::int64_t B = 2, T = 5, C = 4;
  ModelConfig c = test::tiny_config("input");
  c.gate.init_weight = "zero";
  GPT model(c, 0);
  models::ForwardOptions opt;
  opt.collect_stats = true;
  opt.regularizers = {"gate_entropy"};
  auto r = model.forward(test::tokens(B, T, 5, 1), Tensor(), opt);
  EXPECT_EQ(r.stats[0].gate.count, B * T * C);
  EXPECT_NEAR(r.stats[0].gate.mean(), 0.5, 1e-12);  // σ(0)
  EXPECT_NEAR(r.regularizer("gate_entropy").item(), std::log(2.0), 1e-12);
}

TEST(GateInput, Gradients) {
  ModelConfig c = test::tiny_config("input");
  c.n_layer = 1;
  GPT model(c, 4);
  test::perturb_gate_parameters(model, 9);
  Tensor idx = test::tokens(1, 5, c.vocab_size, 2), targets = test::tokens(1, 5, c.vocab_size, 3);
  EXPECT_TRUE(test::model_grads_ok(model, [&] { return model.forward(idx, targets).loss; }));
}

TEST(GateInput, KvCacheEqualsTheFullForward) {
  ModelConfig c = test::tiny_config("input");
  c.block_size = 8;
  GPT model(c, 3);
  test::perturb_gate_parameters(model, 11);
  model.eval();
  Tensor idx = test::tokens(2, 8, c.vocab_size, 5);
  Tensor full;
  {
    NoGradGuard no_grad;
    full = model.forward(idx).logits;
  }
  models::KVCache cache(c, 2);
  std::int64_t pos = 0;
  for (std::int64_t chunk : {3, 1, 4}) {
    Tensor logits = model.forward_cached(ops::slice(idx, 1, pos, pos + chunk), cache);
    EXPECT_TRUE(test::all_close(logits, ops::slice(full, 1, pos, pos + chunk), 1e-11, 1e-9)) << "at " << pos;
    pos += chunk;
  }
}

}  // namespace gattn
