// model.position none (no positional encoding, the Forgetting Transformer's setting): the config
// value, no wpe, every kind against the plain-op reference and in f64 gradchecks, the cached
// forward against the full one (chunked, and at positions far past block_size, where a model
// without positions computes exactly the same thing), and a checkpoint's model run at a longer
// context (recipes/common/context_model.h) giving the block's logits on its prefix.
#include <gtest/gtest.h>

#include "core/autograd/grad_mode.h"
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

ModelConfig none_config(const std::string& kind, DType dtype = DType::f64) {
  ModelConfig c = test::tiny_config(kind, dtype);
  c.position = models::kPositionNone;
  return c;
}

TEST(PositionNone, ConfigAndParameters) {
  EXPECT_EQ(Config::from_string("model:\n  position: none\n").model_config().position, "none");
  ModelConfig c = none_config("forget");
  EXPECT_NO_THROW(c.validate());
  EXPECT_FALSE(c.rope());
  EXPECT_FALSE(c.learned_positions());
  EXPECT_EQ(models::model_config_from_json(models::to_json(c)).position, "none");
  c.rope_theta = 500.0;  // a rotary key means nothing without rope
  EXPECT_NE(test::error_of([&] { c.validate(); }).find("model.rope_theta"), std::string::npos);
  GPT model(none_config("forget"), 0);
  EXPECT_FALSE(model.wpe);
  std::map<std::string, Shape> got;
  for (auto& [name, p] : model.named_parameters()) got[name] = p.shape();
  EXPECT_EQ(got, test::spec_parameters(none_config("forget")));
}

TEST(PositionNone, MatchesThePlainOpReference) {
  for (const std::string& kind : test::all_gate_kinds()) {
    SCOPED_TRACE(kind);
    test::expect_matches_reference(none_config(kind));
  }
}

TEST(PositionNone, WholeModelGradcheck) {
  for (std::string kind : {"none", "forget", "output"}) {
    GPT model(none_config(kind), 3);
    test::perturb_gate_parameters(model, 8);
    model.eval();
    Tensor idx = test::tokens(2, 5, 5, 1), targets = test::tokens(2, 5, 5, 2);
    EXPECT_TRUE(test::model_grads_ok(model, [&] { return model.forward(idx, targets).loss; })) << kind;
  }
}

class PositionNoneCached : public ::testing::TestWithParam<std::string> {};

TEST_P(PositionNoneCached, EqualsTheFullForwardInChunksAndFarPastTheBlock) {
  test::CachedCase k = test::cached_case(none_config(GetParam()));
  // Without positions the absolute position changes nothing: the same tolerance at 10⁶ as at 0.
  for (const std::int64_t start : {std::int64_t{0}, std::int64_t{1000000}})
    test::expect_cached_equals_full(k, start, {4, 1, 1, 2, 1, 2}, 1e-11, 1e-9);
}

INSTANTIATE_TEST_SUITE_P(Kinds, PositionNoneCached, ::testing::ValuesIn(test::all_gate_kinds()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(PositionNone, TheBlockIsNoLimitOnPositionsButIsOnTheForward) {
  ModelConfig c = none_config("forget");
  GPT model(c, 1);
  Tensor long_idx = test::tokens(1, c.block_size + 1, c.vocab_size, 2);
  NoGradGuard no_grad;
  EXPECT_NE(test::error_of([&] { model.forward(long_idx); }).find("block_size"), std::string::npos);
  // A copy of the weights at a longer block runs it, and agrees with the short model on the prefix.
  ModelConfig longer = c;
  longer.block_size = 4 * c.block_size;
  GPT wide(longer, 9);
  for (auto& [name, p] : wide.named_parameters()) p.copy_from(model.parameter(name));
  model.eval();
  wide.eval();
  Tensor wide_logits = wide.forward(long_idx).logits;
  EXPECT_TRUE(test::all_close(ops::slice(wide_logits, 1, 0, c.block_size),
                              model.forward(ops::slice(long_idx, 1, 0, c.block_size)).logits, 1e-12, 1e-12));
}

}  // namespace
}  // namespace gattn
