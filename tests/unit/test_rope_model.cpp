// model.position rope: the config key (values, JSON, metadata without it), the parameter list (no
// wpe), the whole model against the plain-op reference and in f64 gradchecks, the cached forward
// against the full one (chunked, and shifted to positions far past block_size, where rotary
// attention depends on relative positions only), the inspection's weights, and learned untouched.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/autograd/grad_mode.h"
#include "framework/config/errors.h"
#include "gate_reference.h"
#include "model_test_util.h"
#include "models/gpt.h"
#include "models/kv_cache.h"
#include "ops/shape.h"
#include "recipes/common/run_config.h"
#include "test_util.h"

namespace gattn {
namespace {

using models::GPT;
using models::ModelConfig;

// The tiny model with rope and heads of 4 (two frequencies per head).
ModelConfig rope_config(const std::string& kind, DType dtype = DType::f64) {
  ModelConfig c = test::tiny_config(kind, dtype);
  c.n_embd = 8;
  c.position = models::kPositionRope;
  return c;
}

TEST(RopeModel, ConfigValuesAndErrors) {
  ModelConfig c;
  EXPECT_EQ(c.position, "learned");
  EXPECT_FALSE(c.rope());
  c.position = "alibi";
  try {
    c.validate();
    FAIL() << "accepted position alibi";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("model.position"), std::string::npos) << e.what();
  }
  c.position = "rope";
  EXPECT_NO_THROW(c.validate());
  c.n_embd = 12;
  c.n_head = 4;  // head width 3: no pairs to rotate
  EXPECT_THROW(c.validate(), ValueError);
  // Through the run config: the schema names the choices and the line.
  const std::string msg = test::error_of([] { Config::from_string("model:\n  position: alibi\n"); });
  EXPECT_NE(msg.find("model.position"), std::string::npos) << msg;
  EXPECT_EQ(Config::from_string("model:\n  position: rope\n").model_config().position, "rope");
  EXPECT_EQ(Config::defaults().model_config().position, "learned");
}

TEST(RopeModel, JsonCarriesThePositionAndOldMetadataIsLearned) {
  ModelConfig c = rope_config("output");
  nlohmann::json j = models::to_json(c);
  EXPECT_EQ(j["position"], "rope");
  EXPECT_EQ(models::model_config_from_json(j).position, "rope");
  j.erase("position");  // metadata from before model.position
  EXPECT_EQ(models::model_config_from_json(j).position, "learned");
  j["position"] = 3;
  EXPECT_THROW(models::model_config_from_json(j), ValueError);
  j["position"] = "sinusoid";
  EXPECT_THROW(models::model_config_from_json(j), ValueError);
  // A checkpoint's config metadata (the whole run config) without the key reads as learned.
  Config old = Config::from_string("{\"model\": {\"vocab_size\": 5, \"n_embd\": 8, \"n_head\": 2}}");
  EXPECT_EQ(old.model_config().position, "learned");
  EXPECT_EQ(
      Config::from_string(Config::from_string("model: {position: rope}\n").to_json().dump()).model_config().position,
      "rope");
}

TEST(RopeModel, HasNoPositionTable) {
  for (std::string kind : {"none", "score", "pair"}) {
    const ModelConfig c = rope_config(kind);
    GPT model(c, 0);
    std::map<std::string, Shape> got;
    for (auto& [name, p] : model.named_parameters()) got[name] = p.shape();
    EXPECT_EQ(got.count("wpe.weight"), 0u);
    EXPECT_FALSE(model.wpe);
    EXPECT_EQ(got, test::spec_parameters(c)) << kind;
  }
  ModelConfig learned = rope_config("none");
  learned.position = models::kPositionLearned;
  GPT model(learned, 0);
  EXPECT_EQ(model.parameter("wpe.weight").shape(), (Shape{6, 8}));
}

TEST(RopeModel, MatchesThePlainOpReference) {
  // Every kind, and all of them in one block: the reference rotates q, k with slices and products.
  for (const std::string& kind : test::all_gate_kinds()) {
    SCOPED_TRACE(kind);
    test::expect_matches_reference(rope_config(kind));
  }
  ModelConfig score = rope_config("score");
  score.gate.options["form"] = "multiplicative";
  score.gate.options["source"] = "query_key";
  test::expect_matches_reference(score);
}

TEST(RopeModel, PositionsChangeTheLogits) {
  // Without positions a causal model still tells order apart; the check is that rope acts at all:
  // the same model without the rotation (learned, copied weights, wpe zeroed) gives other logits.
  const ModelConfig c = rope_config("none");
  GPT rope(c, 3);
  ModelConfig lc = c;
  lc.position = models::kPositionLearned;
  GPT learned(lc, 3);
  for (auto& [name, p] : rope.named_parameters()) learned.parameter(name).copy_from(p);
  learned.parameter("wpe.weight").copy_from(Tensor::zeros({6, 8}, DType::f64));
  Tensor idx = test::tokens(2, 6, c.vocab_size, 4);
  NoGradGuard no_grad;
  EXPECT_FALSE(test::all_close(rope.forward(idx).logits, learned.forward(idx).logits, 1e-6, 1e-6));
  // The first position (angle 0) is not rotated: its logits agree.
  EXPECT_TRUE(test::all_close(ops::slice(rope.forward(idx).logits, 1, 0, 1),
                              ops::slice(learned.forward(idx).logits, 1, 0, 1), 1e-12, 1e-12));
}

// loss + every regulariser, as a training step differentiates.
Tensor objective(GPT& model, const Tensor& idx, const Tensor& targets) {
  models::ForwardOptions opt;
  opt.regularizers = {"gate_entropy", "attn_entropy", "router_balance"};
  models::ForwardResult r = model.forward(idx, targets, opt);
  Tensor total = r.loss;
  for (const auto& [name, t] : r.regularizers) total = total + t;
  return total;
}

TEST(RopeModel, WholeModelGradcheck) {
  for (std::string kind : {"none", "score", "forget", "pair"}) {
    GPT model(rope_config(kind), 3);
    test::perturb_gate_parameters(model, 8);
    model.eval();
    Tensor idx = test::tokens(2, 5, 5, 1), targets = test::tokens(2, 5, 5, 2);
    EXPECT_TRUE(test::model_grads_ok(model, [&] { return objective(model, idx, targets); })) << kind;
  }
}

class RopeCached : public ::testing::TestWithParam<std::string> {};

TEST_P(RopeCached, EqualsTheFullForwardInChunks) {
  test::CachedCase k = test::cached_case(rope_config(GetParam()));
  test::expect_cached_equals_full(k, 0, {4, 1, 1, 2, 1, 2}, 1e-11, 1e-9);
  // The same sequence at absolute positions 10⁶ … 10⁶+10, far past block_size: rotary scores depend
  // on p_i − p_j only, so the logits are the full forward's (to the rounding of the larger angles).
  test::expect_cached_equals_full(k, 1000000, {3, 1, 5, 2}, 1e-8, 1e-7);
}

INSTANTIATE_TEST_SUITE_P(Kinds, RopeCached, ::testing::ValuesIn(test::all_gate_kinds()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(RopeModel, CachedPositionsAreChecked) {
  ModelConfig c = rope_config("none");
  GPT model(c, 1);
  model.eval();
  models::KVCache cache(c, 1);
  Tensor one = test::tokens(1, 1, c.vocab_size, 2);
  EXPECT_NE(test::error_of([&] { model.forward_cached(one, cache, -1); }).find("positions"), std::string::npos);
  EXPECT_NO_THROW(model.forward_cached(one, cache, 5000));
  EXPECT_EQ(cache.length(), 1);
  // Learned positions end with the table.
  ModelConfig lc = c;
  lc.position = models::kPositionLearned;
  GPT learned(lc, 1);
  models::KVCache lcache(lc, 1);
  EXPECT_NE(test::error_of([&] { learned.forward_cached(one, lcache, 6); }).find("block_size"), std::string::npos);
  EXPECT_NO_THROW(learned.forward_cached(one, lcache, 5));
  // Cache rows still end at the capacity, whatever the positions.
  models::KVCache full(c, 1);
  model.forward_cached(test::tokens(1, 6, c.vocab_size, 3), full, 100);
  EXPECT_NE(test::error_of([&] { model.forward_cached(one, full, 106); }).find("capacity"), std::string::npos);
}

}  // namespace
}  // namespace gattn
