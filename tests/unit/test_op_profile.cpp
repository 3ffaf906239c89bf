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

  const std::string table = recipes::op_profile_table(times, 1, {});
  EXPECT_NE(table.find("| linear | "), std::string::npos) << table;
  EXPECT_NE(table.find("no FMA peak measured"), std::string::npos) << table;
  const nlohmann::json j = recipes::op_profile_json(times, 2, {});
  EXPECT_EQ(j["steps"], 2);
  EXPECT_EQ(j["ops"][0]["op"], "linear") << j.dump();  // the most expensive first
  EXPECT_DOUBLE_EQ(j["ops"][0]["forward_calls"].get<double>(), 1.0);
}

// The step in FLOP-time terms: 2 steps of 1000 tokens at 6 MFLOP per token in 0.1 s is 120 GFLOP/s,
// 60 % of a 200 GFLOP/s peak; the ops' share is of the wall time, the rest reported as such.
TEST(OpProfile, StepRateAgainstTheMeasuredPeak) {
  recipes::OpProfile times;
  times["linear"] = {0.03, 0.04, 2, 2};
  recipes::StepRate rate;
  rate.wall_s = 0.1;
  rate.tokens = 2000;
  rate.flops_per_token = 6e6;
  rate.threads = 2;
  rate.peak = {200.0, "avx512"};
  EXPECT_DOUBLE_EQ(rate.gflops(), 120.0);
  EXPECT_DOUBLE_EQ(rate.peak_percent(), 60.0);
  const std::string table = recipes::op_profile_table(times, 2, rate);
  for (const char* needle : {"50.00 ms per step (the ops 35.00 ms", "1000 tokens", "6.000 model GFLOP per step",
                             "120.0 GFLOP/s = 60.0 % of this machine's FMA peak (200.0 GFLOP/s measured, avx512",
                             "| linear | 15.000 | 20.000 | 70.0 % |", "| (between the ops"})
    EXPECT_NE(table.find(needle), std::string::npos) << needle << "\n" << table;
  const nlohmann::json j = recipes::op_profile_json(times, 2, rate);
  EXPECT_DOUBLE_EQ(j["peak_percent"].get<double>(), 60.0);
  EXPECT_DOUBLE_EQ(j["wall_ms_per_step"].get<double>(), 50.0);
  EXPECT_DOUBLE_EQ(j["ops"][0]["share_of_wall"].get<double>(), 0.7);
}

// The measured peak is a real rate on x86-64, from one of the two FMA loops; nothing elsewhere.
TEST(FmaPeak, MeasuresThisMachine) {
#if defined(__x86_64__)
  const FmaPeak one = measure_fma_peak(1, 0.02);
  EXPECT_GT(one.gflops, 1.0);
  EXPECT_TRUE(one.isa == "avx2" || one.isa == "avx512") << one.isa;
#else
  EXPECT_EQ(measure_fma_peak(1, 0.02).gflops, 0.0);
#endif
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
