// The model config (validation errors naming keys, JSON round trip) and the GPT of models/README.md: GPT-2
// initialisation, forward and loss, bad input, causality, whole-model gradchecks for every gate
// kind with all regularisers, FLOPs per token, and a save/load round trip.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "framework/io/module_io.h"
#include "model_test_util.h"
#include "models/config.h"
#include "models/gating/registry.h"
#include "models/gpt.h"
#include "ops/elementwise.h"
#include "ops/nn_functional.h"
#include "ops/reduce.h"
#include "test_util.h"

namespace gattn {

using models::GPT;
using models::ModelConfig;
using std::string;

namespace {

// Expects validate() to throw a ValueError whose message contains `key`.
::testing::AssertionResult rejects(const ModelConfig& c, const std::string& key) {
  try {
    c.validate();
  } catch (const ValueError& e) {
    if (std::string(e.what()).find(key) != std::string::npos) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "message does not name " << key << ": " << e.what();
  }
  return ::testing::AssertionFailure() << "accepted; expected an error naming " << key;
}

template <class E, class F>
::testing::AssertionResult throws_naming(F&& f, const std::vector<std::string>& parts) {
  try {
    f();
  } catch (const E& e) {
    for (const std::string& p : parts)
      if (std::string(e.what()).find(p) == std::string::npos)
        return ::testing::AssertionFailure() << "message does not contain '" << p << "': " << e.what();
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "no (or another type of) exception";
}

double std_of(const Tensor& t) {
  std::vector<double> v = t.to_vector();
  double m = 0, s = 0;
  for (double x : v) m += x;
  m /= static_cast<double>(v.size());
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size()));
}

// loss + every regulariser the model defines: the objective a training step differentiates.
Tensor full_objective(GPT& model, const Tensor& idx, const Tensor& targets) {
  models::ForwardOptions opt;
  opt.regularizers = {"gate_entropy", "attn_entropy", "router_balance"};
  models::ForwardResult r = model.forward(idx, targets, opt);
  Tensor total = r.loss;
  for (const Tensor& t :
       {r.regularizer("gate_entropy"), r.regularizer("attn_entropy"), r.regularizer("router_balance")})
    if (t.defined()) total = total + t;
  return total;
}

void expect_model_gradcheck(ModelConfig c, bool train_with_noise = false) {
  GPT model(c, 3);
  test::perturb_gate_parameters(model, 8);
  Tensor idx = test::tokens(2, 5, c.vocab_size, 1), targets = test::tokens(2, 5, c.vocab_size, 2);
  const GeneratorState noise = model.noise_generator().state();
  model.train(train_with_noise);
  EXPECT_TRUE(test::model_grads_ok(model, [&] {
    model.noise_generator().set_state(noise);  // the same noise every call: a deterministic function
    return full_objective(model, idx, targets);
  })) << std::string(c.gate.kind);
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("gattn_test_gpt_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

}  // namespace

// ---------------------------------------------------------------- ModelConfig

TEST(ModelConfig, DefaultsAreValid) {
  ModelConfig c;
  EXPECT_NO_THROW(c.validate());
  EXPECT_EQ(c.head_dim(), 32);
}

TEST(ModelConfig, GateKindNamesAreTheRegistered) {
  for (const std::string& k : test::all_gate_kinds()) {
    if (k != "none") {
      EXPECT_EQ(models::gate_kind(k).name, k);
    }
  }
  EXPECT_TRUE(throws_naming<ValueError>(
      [] { models::gate_kind("foo"); },
      {"model.gate.kind", "'foo'", "none, ", "score", "forget", "pair", "routed", "context", "output"}));
}

TEST(ModelConfig, ErrorsNameTheKey) {
  auto with = [](auto change) {
    ModelConfig c;
    change(c);
    return c;
  };
  EXPECT_TRUE(rejects(with([](ModelConfig& c) { c.n_embd = 130; }), "model.n_embd"));
  EXPECT_TRUE(rejects(with([](ModelConfig& c) { c.n_embd = 130; }), "model.n_head"));
  EXPECT_TRUE(rejects(with([](ModelConfig& c) { c.n_embd = 0; }), "model.n_embd"));
  EXPECT_TRUE(rejects(with([](ModelConfig& c) { c.n_head = 0; }), "model.n_head"));
  EXPECT_TRUE(rejects(with([](ModelConfig& c) { c.n_layer = -1; }), "model.n_layer"));
  EXPECT_TRUE(rejects(with([](ModelConfig& c) { c.block_size = 0; }), "model.block_size"));
  EXPECT_TRUE(rejects(with([](ModelConfig& c) { c.vocab_size = -3; }), "model.vocab_size"));
  EXPECT_TRUE(rejects(with([](ModelConfig& c) {
                        c.gate.kind = "output";
                        c.gate.options["granularity"] = "rowwise";
                      }),
                      "model.gate.granularity"));
  EXPECT_TRUE(rejects(with([](ModelConfig& c) {
                        c.gate.kind = "output";
                        c.gate.activation = "relu";
                      }),
                      "model.gate.activation"));
  EXPECT_TRUE(rejects(with([](ModelConfig& c) {
                        c.gate.kind = "output";
                        c.gate.temperature = 0;
                      }),
                      "model.gate.temperature"));
  EXPECT_TRUE(rejects(with([](ModelConfig& c) {
                        c.gate.kind = "output";
                        c.gate.temperature = -1;
                      }),
                      "model.gate.temperature"));
  EXPECT_TRUE(rejects(with([](ModelConfig& c) {
                        c.gate.kind = "output";
                        c.gate.temperature = NAN;
                      }),
                      "model.gate.temperature"));
  EXPECT_TRUE(rejects(with([](ModelConfig& c) {
                        c.gate.kind = "output";
                        c.gate.init_weight = "xavier";
                      }),
                      "model.gate.init_weight"));
  EXPECT_TRUE(rejects(with([](ModelConfig& c) {
                        c.gate.kind = "output";
                        c.gate.init_bias = INFINITY;
                      }),
                      "model.gate.init_bias"));
  EXPECT_TRUE(rejects(with([](ModelConfig& c) {
                        c.gate.all_layers = false;
                        c.gate.layers = {0, 4};
                      }),
                      "model.gate.layers"));
  EXPECT_TRUE(rejects(with([](ModelConfig& c) {
                        c.gate.all_layers = false;
                        c.gate.layers = {-1};
                      }),
                      "model.gate.layers"));
  EXPECT_TRUE(rejects(with([](ModelConfig& c) {
                        c.gate.all_layers = false;
                        c.gate.layers = {1, 1};
                      }),
                      "model.gate.layers"));
  EXPECT_TRUE(rejects(with([](ModelConfig& c) {
                        c.gate.kind = "routed";
                        c.gate.options["windows"] = nlohmann::json::array();
                      }),
                      "model.gate.windows"));
  EXPECT_TRUE(rejects(with([](ModelConfig& c) {
                        c.gate.kind = "routed";
                        c.gate.options["windows"] = {0, -2};
                      }),
                      "model.gate.windows"));
  EXPECT_TRUE(rejects(with([](ModelConfig& c) {
                        c.gate.kind = "routed";
                        c.gate.options["top_k"] = 3;
                      }),
                      "model.gate.top_k"));
  EXPECT_TRUE(rejects(with([](ModelConfig& c) {
                        c.gate.kind = "routed";
                        c.gate.options["top_k"] = 0;
                      }),
                      "model.gate.top_k"));
  EXPECT_TRUE(rejects(with([](ModelConfig& c) { c.dtype = DType::i32; }), "model.dtype"));
  ModelConfig ok;
  ok.gate.all_layers = false;
  ok.gate.layers = {3, 0};
  ok.gate.options["windows"] = {0, 16, 64};
  ok.gate.options["top_k"] = 3;
  EXPECT_NO_THROW(ok.validate());
}

TEST(ModelConfig, AppliesToAndInitBias) {
  models::GateConfig g;
  EXPECT_FALSE(g.applies_to(0));  // kind none gates nothing
  g.kind = "score";
  EXPECT_TRUE(g.applies_to(2));
  g.all_layers = false;
  g.layers = {1};
  EXPECT_FALSE(g.applies_to(0));
  EXPECT_TRUE(g.applies_to(1));
  EXPECT_EQ(g.resolved_init_bias(), 0.0);
  g.kind = "forget";
  EXPECT_EQ(g.resolved_init_bias(), 3.0);
  g.init_bias = -2;
  EXPECT_EQ(g.resolved_init_bias(), -2.0);
}

TEST(ModelConfig, JsonRoundTrip) {
  ModelConfig c;
  c.vocab_size = 65;
  c.n_layer = 3;
  c.gate.kind = "routed";
  c.gate.all_layers = false;
  c.gate.layers = {0, 2};
  c.gate.activation = "gumbel_sigmoid";
  c.gate.temperature = 0.5;
  c.gate.options["windows"] = {0, 8, 32};
  c.gate.options["top_k"] = 2;
  c.gate.init_weight = "zero";
  nlohmann::json j = models::to_json(c);
  EXPECT_EQ(j["gate"]["kind"], "routed");
  EXPECT_TRUE(j["gate"]["init_bias"].is_null());  // NaN = the kind's default
  ModelConfig back = models::model_config_from_json(nlohmann::json::parse(j.dump()));
  EXPECT_EQ(models::to_json(back), j);
  EXPECT_TRUE(std::isnan(back.gate.init_bias));
  EXPECT_EQ(back.gate.layers, (std::vector<std::int64_t>{0, 2}));
  EXPECT_FALSE(back.gate.all_layers);
  c.gate.all_layers = true;
  c.gate.init_bias = 1.5;
  j = models::to_json(c);
  EXPECT_EQ(j["gate"]["layers"], "all");
  back = models::model_config_from_json(j);
  EXPECT_TRUE(back.gate.all_layers);
  EXPECT_EQ(back.gate.init_bias, 1.5);
}

TEST(ModelConfig, JsonErrorsNameTheKey) {
  nlohmann::json good = models::to_json(ModelConfig{});
  auto fails = [&](auto change, const std::string& key) {
    nlohmann::json j = good;
    change(j);
    return throws_naming<ValueError>([&] { models::model_config_from_json(j); }, {key});
  };
  EXPECT_TRUE(fails([](nlohmann::json& j) { j.erase("n_head"); }, "model.n_head"));
  EXPECT_TRUE(fails([](nlohmann::json& j) { j["n_embd"] = "big"; }, "model.n_embd"));
  EXPECT_TRUE(fails([](nlohmann::json& j) { j["n_embd"] = 1.5; }, "model.n_embd"));
  EXPECT_TRUE(fails([](nlohmann::json& j) { j["colour"] = 1; }, "model.colour"));
  EXPECT_TRUE(fails([](nlohmann::json& j) { j["gate"]["kind"] = "foo"; }, "model.gate.kind"));
  EXPECT_TRUE(fails([](nlohmann::json& j) { j["gate"]["layers"] = "some"; }, "model.gate.layers"));
  EXPECT_TRUE(fails([](nlohmann::json& j) { j["gate"]["layers"] = {0, "x"}; }, "model.gate.layers"));
  // A kind's own keys are checked where the kind reads them.
  EXPECT_TRUE(fails(
      [](nlohmann::json& j) {
        j["gate"]["kind"] = "routed";
        j["gate"]["windows"] = 3;
      },
      "model.gate.windows"));
  EXPECT_TRUE(fails(
      [](nlohmann::json& j) {
        j["gate"]["kind"] = "routed";
        j["gate"]["top_k"] = 5;
      },
      "model.gate.top_k"));
  EXPECT_TRUE(fails([](nlohmann::json& j) { j["gates"] = 3; }, "model.gates"));
  EXPECT_TRUE(fails([](nlohmann::json& j) { j["gates"] = {{{"kind", "output"}}}; }, "model.gates[0].layers"));
  EXPECT_TRUE(fails([](nlohmann::json& j) { j["gate"].erase("temperature"); }, "model.gate.temperature"));
  EXPECT_TRUE(fails([](nlohmann::json& j) { j["gate"] = 3; }, "model.gate"));
  EXPECT_TRUE(throws_naming<ValueError>([] { models::model_config_from_json(nlohmann::json::array()); }, {"model"}));
}

// ---------------------------------------------------------------- construction and forward

TEST(Gpt, Gpt2Initialisation) {
  ModelConfig c;
  c.vocab_size = 96;
  c.block_size = 64;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 64;
  GPT model(c, 42);
  EXPECT_NEAR(std_of(model.parameter("wte.weight")), 0.02, 0.002);
  EXPECT_NEAR(std_of(model.parameter("wpe.weight")), 0.02, 0.002);
  EXPECT_NEAR(std_of(model.parameter("blocks.0.attn.qkv.weight")), 0.02, 0.002);
  EXPECT_NEAR(std_of(model.parameter("blocks.1.mlp.fc.weight")), 0.02, 0.002);
  const double residual = 0.02 / std::sqrt(4.0);  // 0.02/√(2L)
  EXPECT_NEAR(std_of(model.parameter("blocks.0.attn.proj.weight")), residual, residual * 0.1);
  EXPECT_NEAR(std_of(model.parameter("blocks.1.mlp.proj.weight")), residual, residual * 0.1);
  for (auto& [name, p] : model.named_parameters()) {
    const bool is_bias = name.size() > 5 && name.substr(name.size() - 5) == ".bias";
    const bool is_ln_weight = name.find("ln") != std::string::npos && !is_bias;
    if (is_bias) {
      for (double v : p.to_vector()) EXPECT_EQ(v, 0.0) << name;
    }
    if (is_ln_weight) {
      for (double v : p.to_vector()) EXPECT_EQ(v, 1.0) << name;
    }
    EXPECT_EQ(p.dtype(), DType::f32) << name;
    EXPECT_TRUE(p.requires_grad()) << name;
  }
  // Same seed, same weights; another seed, other weights.
  GPT same(c, 42), other(c, 43);
  EXPECT_TRUE(
      test::all_close(same.parameter("blocks.1.attn.qkv.weight"), model.parameter("blocks.1.attn.qkv.weight"), 0, 0));
  EXPECT_FALSE(test::all_close(other.parameter("blocks.1.attn.qkv.weight"), model.parameter("blocks.1.attn.qkv.weight"),
                               1e-6, 0));
}

TEST(Gpt, ForwardShapesAndLoss) {
  ModelConfig c = test::tiny_config("output", DType::f32);
  c.vocab_size = 11;
  GPT model(c, 0);
  Tensor idx = test::tokens(3, 4, 11, 1), targets = test::tokens(3, 4, 11, 2);
  models::ForwardResult r = model.forward(idx, targets);
  EXPECT_EQ(r.logits.shape(), (Shape{3, 4, 11}));
  EXPECT_EQ(r.loss.shape(), Shape{});
  // The loss is the mean token cross-entropy of the logits.
  std::vector<double> z = r.logits.to_vector();
  double total = 0;
  for (std::int64_t t = 0; t < 12; ++t) {
    double m = -1e300, s = 0;
    for (std::int64_t v = 0; v < 11; ++v) m = std::max(m, z[static_cast<std::size_t>(t * 11 + v)]);
    for (std::int64_t v = 0; v < 11; ++v) s += std::exp(z[static_cast<std::size_t>(t * 11 + v)] - m);
    total += m + std::log(s) - z[static_cast<std::size_t>(t * 11 + targets.at(t))];
  }
  EXPECT_NEAR(r.loss.item(), total / 12, 1e-5);
  EXPECT_NEAR(r.loss.item(), std::log(11.0), 0.1);  // small init: near-uniform predictions
  // Nothing extra unless asked.
  EXPECT_TRUE(r.stats.empty());
  EXPECT_FALSE(r.regularizer("gate_entropy").defined());
  EXPECT_FALSE(r.regularizer("attn_entropy").defined());
  EXPECT_FALSE(model.forward(idx).loss.defined());
}

TEST(Gpt, LogitsUseTheTiedEmbedding) {
  ModelConfig c = test::tiny_config("none");
  GPT model(c, 0);
  Tensor idx = test::tokens(1, 3, 5, 1);
  Tensor before = model.forward(idx).logits;
  // logits = x·wteᵀ: the gradient of Σ logits reaches every row of wte, not only the input tokens'.
  Tensor loss = ops::sum(model.forward(idx).logits);
  loss.backward();
  Tensor g = model.parameter("wte.weight").grad();
  ASSERT_TRUE(g.defined());
  for (std::int64_t v = 0; v < 5; ++v) {
    double row = 0;
    for (std::int64_t j = 0; j < 4; ++j) row += std::abs(g.at(v * 4 + j));
    EXPECT_GT(row, 0.0) << "row " << v;
  }
  EXPECT_EQ(before.shape(), (Shape{1, 3, 5}));
}

TEST(Gpt, BadInputIsATypedError) {
  GPT model(test::tiny_config("pair", DType::f32), 0);
  EXPECT_THROW(model.forward(Tensor::zeros({2, 3}, DType::f32)), DTypeError);
  EXPECT_THROW(model.forward(Tensor::from_ints({1, 2, 3}, {3})), ShapeError);
  EXPECT_THROW(model.forward(Tensor::from_ints({1, 2, 3, 4}, {1, 2, 2})), ShapeError);
  EXPECT_THROW(model.forward(Tensor::empty({0, 3}, DType::i32)), ShapeError);
  EXPECT_THROW(model.forward(Tensor()), ValueError);
  EXPECT_TRUE(
      throws_naming<ShapeError>([&] { model.forward(test::tokens(1, 7, 5, 1)); }, {"T=7", "model.block_size=6"}));
  EXPECT_TRUE(throws_naming<ValueError>(
      [&] {
        model.forward(Tensor::from_ints({0, 5}, {1, 2}));
      },
      {"token id 5", "vocab_size=5"}));
  EXPECT_THROW(model.forward(Tensor::from_ints({-1, 0}, {1, 2})), ValueError);
  Tensor idx = test::tokens(2, 3, 5, 1);
  EXPECT_THROW(model.forward(idx, test::tokens(2, 2, 5, 1)), ShapeError);
  EXPECT_THROW(model.forward(idx, Tensor::zeros({2, 3}, DType::f32)), DTypeError);
  EXPECT_THROW(model.forward(idx, Tensor::full({2, 3}, 9, DType::i32)), ValueError);

  ModelConfig bad = test::tiny_config("none");
  bad.n_embd = 5;  // not divisible by n_head = 2
  EXPECT_TRUE(throws_naming<ValueError>([&] { GPT m(bad, 0); }, {"model.n_embd", "model.n_head"}));
  bad = test::tiny_config("routed");
  bad.gate.options["top_k"] = 3;
  EXPECT_TRUE(throws_naming<ValueError>([&] { GPT m(bad, 0); }, {"model.gate.top_k"}));
  bad = test::tiny_config("output");
  bad.gate.all_layers = false;
  bad.gate.layers = {2};
  EXPECT_TRUE(throws_naming<ValueError>([&] { GPT m(bad, 0); }, {"model.gate.layers"}));
  bad = test::tiny_config("none");
  bad.vocab_size = 0;
  EXPECT_TRUE(throws_naming<ValueError>([&] { GPT m(bad, 0); }, {"model.vocab_size"}));
}

TEST(Gpt, CausalForEveryKind) {
  // Changing the last token changes no earlier position's logits.
  for (std::string kind : test::all_gate_kinds()) {
    ModelConfig c = test::tiny_config(kind);
    c.gate.options["top_k"] = 2;
    GPT model(c, 1);
    test::perturb_gate_parameters(model, 4);
    model.eval();
    std::vector<std::int32_t> a{1, 4, 2, 0, 3, 1}, b = a;
    b[5] = 2;
    Tensor la = model.forward(Tensor::from_ints(a, {1, 6})).logits,
           lb = model.forward(Tensor::from_ints(b, {1, 6})).logits;
    for (std::int64_t i = 0; i < 5 * 5; ++i) EXPECT_NEAR(la.at(i), lb.at(i), 1e-12) << std::string(kind);
    double last = 0;
    for (std::int64_t i = 25; i < 30; ++i) last += std::abs(la.at(i) - lb.at(i));
    EXPECT_GT(last, 0.0) << std::string(kind);
    // A shorter sequence is the same model on the prefix.
    Tensor prefix = model.forward(Tensor::from_ints({1, 4, 2}, {1, 3})).logits;
    for (std::int64_t i = 0; i < 15; ++i) EXPECT_NEAR(prefix.at(i), la.at(i), 1e-12) << std::string(kind);
  }
}

TEST(Gpt, SgdStepsReduceTheLoss) {
  ModelConfig c = test::tiny_config("forget", DType::f32);
  c.n_embd = 8;
  GPT model(c, 0);
  Tensor idx = test::tokens(4, 6, 5, 1), targets = test::tokens(4, 6, 5, 2);
  double first = 0, last = 0;
  for (int step = 0; step < 30; ++step) {
    model.zero_grad();
    Tensor loss = full_objective(model, idx, targets);
    if (step == 0) first = loss.item();
    last = loss.item();
    loss.backward();
    for (Tensor& p : model.parameters())
      if (p.grad().defined()) ops::axpy_(p, -0.5, p.grad());
  }
  EXPECT_LT(last, first - 0.2);
}

// ---------------------------------------------------------------- whole-model gradchecks (f64)

TEST(GptGradcheck, None) { expect_model_gradcheck(test::tiny_config("none")); }
TEST(GptGradcheck, Output) { expect_model_gradcheck(test::tiny_config("output")); }
TEST(GptGradcheck, OutputHeadwise) {
  ModelConfig c = test::tiny_config("output");
  c.gate.options["granularity"] = "headwise";
  expect_model_gradcheck(c);
}
TEST(GptGradcheck, Score) { expect_model_gradcheck(test::tiny_config("score")); }
TEST(GptGradcheck, Forget) { expect_model_gradcheck(test::tiny_config("forget")); }
TEST(GptGradcheck, Pair) { expect_model_gradcheck(test::tiny_config("pair")); }
TEST(GptGradcheck, Context) { expect_model_gradcheck(test::tiny_config("context")); }
TEST(GptGradcheck, RoutedTopOne) { expect_model_gradcheck(test::tiny_config("routed")); }
TEST(GptGradcheck, RoutedTopTwoOfThree) {
  ModelConfig c = test::tiny_config("routed");
  c.gate.options["windows"] = {0, 2, 3};
  c.gate.options["top_k"] = 2;
  expect_model_gradcheck(c);
}
TEST(GptGradcheck, GumbelWhileTraining) {
  for (std::string kind : {"output", "score", "pair"}) {
    ModelConfig c = test::tiny_config(kind);
    c.gate.activation = "gumbel_sigmoid";
    c.gate.temperature = 0.8;
    expect_model_gradcheck(c, /*train_with_noise=*/true);
  }
}
TEST(GptGradcheck, GateOnOneLayer) {
  ModelConfig c = test::tiny_config("context");
  c.gate.all_layers = false;
  c.gate.layers = {1};
  expect_model_gradcheck(c);
}

// ---------------------------------------------------------------- FLOPs

TEST(Gpt, FlopsPerTokenByHand) {
  ModelConfig c = test::tiny_config("none");  // V=5, C=4, H=2, d=2, L=2
  GPT none(c, 0);
  // N = V·C + L·12·C² = 20 + 2·192 = 404; attention 6·L·T·C = 6·2·6·4 = 288.
  EXPECT_DOUBLE_EQ(none.flops_per_token(6), 6 * 404.0 + 288.0);
  c.gate.kind = "output";  // + L·C·C gate weight
  EXPECT_DOUBLE_EQ(GPT(c, 0).flops_per_token(6), 6 * (404.0 + 2 * 16) + 288.0);
  c.gate.kind = "context";  // + L·H·2d² = 2·2·8
  EXPECT_DOUBLE_EQ(GPT(c, 0).flops_per_token(6), 6 * (404.0 + 32) + 288.0);
  c.gate.kind = "routed";  // windows {0, 2}: + L·E·C router; experts: T/2 and 2 − 4/12 keys, each
  // token visiting top_k = 1 of the E = 2 (each expert computes only its rows)
  const double keys = (3 + (2 - 4.0 / 12)) / 2;
  EXPECT_DOUBLE_EQ(GPT(c, 0).flops_per_token(6), 6 * (404.0 + 2 * 8) + 2 * 12 * 4 * keys);
  EXPECT_GT(none.flops_per_token(1), 0.0);
  EXPECT_THROW(none.flops_per_token(0), ValueError);
}

// ---------------------------------------------------------------- save / load

TEST(Gpt, SavedThenLoadedModelGivesIdenticalLogits) {
  for (std::string kind : test::all_gate_kinds()) {
    ModelConfig c = test::tiny_config(kind, DType::f32);
    GPT model(c, 5);
    test::perturb_gate_parameters(model, 1);
    model.eval();
    const std::string path = temp_path(std::string(std::string(kind)) + ".safetensors");
    save_module(path, model, {{"config", models::to_json(c).dump()}});
    auto meta = load_module(path, *std::make_unique<GPT>(c, 99));  // a smoke load into a fresh model
    ModelConfig loaded_config = models::model_config_from_json(nlohmann::json::parse(meta.at("config")));
    GPT loaded(loaded_config, 1234);
    load_module(path, loaded);
    loaded.eval();
    Tensor idx = test::tokens(2, 6, 5, 3);
    EXPECT_TRUE(test::all_close(loaded.forward(idx).logits, model.forward(idx).logits, 0, 0)) << std::string(kind);
    std::filesystem::remove(path);
  }
}

}  // namespace gattn
