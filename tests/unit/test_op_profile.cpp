// The op profile (`gattn train --profile-ops`): ops are charged forward and backward by name, with
// the right call counts; sections time non-op spans; nothing is collected while it is off.
#include <gtest/gtest.h>

#include "core/autograd/op_profile.h"
#include "core/tensor/tensor.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
#include "recipes/train/op_profile_report.h"

namespace gattn {
namespace {

namespace profile = autograd::profile;

Tensor two_linears(const Tensor& x, const Tensor& w) { return ops::linear(ops::linear(x, w), w); }

TEST(OpProfile, ChargesEachOpForwardAndBackwardByName) {
  const Tensor x = Tensor::full({8, 4}, 0.5);
  Tensor w = Tensor::full({4, 4}, 0.25);
  w.set_requires_grad(true);
  profile::enable(true);
  { const profile::Section s("(data)"); }
  Tensor y = two_linears(x, w);
  ops::sum(y).backward();
  profile::enable(false);
  const auto times = profile::snapshot();
  ASSERT_TRUE(times.count("linear"));
  EXPECT_EQ(times.at("linear").forward_calls, 2);
  EXPECT_EQ(times.at("linear").backward_calls, 2);
  EXPECT_GE(times.at("linear").forward_s, 0.0);
  EXPECT_GT(times.at("linear").backward_s, 0.0);
  ASSERT_TRUE(times.count("(data)"));
  EXPECT_EQ(times.at("(data)").forward_calls, 1);
  // w is used twice: its two gradients meet at the leaf.
  ASSERT_TRUE(times.count("(leaf accumulate)"));
  EXPECT_EQ(times.at("(leaf accumulate)").backward_calls, 2);

  const std::string table = recipes::op_profile_table(times, 1);
  EXPECT_NE(table.find("| linear | "), std::string::npos) << table;
  const nlohmann::json j = recipes::op_profile_json(times, 2);
  EXPECT_EQ(j["steps"], 2);
  EXPECT_EQ(j["ops"][0]["op"], "linear") << j.dump();  // the most expensive first
  EXPECT_DOUBLE_EQ(j["ops"][0]["forward_calls"].get<double>(), 1.0);
}

TEST(OpProfile, CollectsNothingWhileOff) {
  profile::enable(true);
  profile::enable(false);
  const Tensor x = Tensor::full({8, 4}, 0.5);
  Tensor w = Tensor::full({4, 4}, 0.25);
  w.set_requires_grad(true);
  ops::sum(two_linears(x, w)).backward();
  { const profile::Section s("(data)"); }
  EXPECT_TRUE(profile::snapshot().empty());
}

}  // namespace
}  // namespace gattn
