// cross_entropy: a case computed by hand, agreement with −log_softmax at the target, ±1000
// logits, ignore_index rows (and all rows ignored), gradchecks, and the typed errors.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/nn_functional.h"
#include "test_util.h"

namespace gattn {
namespace {

TEST(CrossEntropy, HandComputed) {
  // Row 0: log(e + e² + e³) − 3 = 0.40760596444438; row 1: log 3 − 1 + 1 = 1.09861228866811.
  Tensor logits = Tensor::from({1, 2, 3, 1, 1, 1}, {2, 3}, DType::f64);
  Tensor loss = ops::cross_entropy(logits, Tensor::from_ints({2, 0}, {2}));
  EXPECT_EQ(loss.dim(), 0);
  EXPECT_EQ(loss.dtype(), DType::f64);
  EXPECT_NEAR(loss.item(), (0.40760596444438 + 1.09861228866811) / 2, 1e-12);
}

TEST(CrossEntropy, GradientIsSoftmaxMinusOneHotOverCount) {
  Tensor logits = Tensor::from({1, 2, 3, 1, 1, 1}, {2, 3}, DType::f64).set_requires_grad(true);
  ops::cross_entropy(logits, Tensor::from_ints({2, 0}, {2})).backward(Tensor::scalar(3.0, DType::f64));
  std::vector<double> p0 = {0.09003057317038046, 0.24472847105479764, 0.6652409557748219};
  std::vector<double> want = {p0[0], p0[1], p0[2] - 1, 1.0 / 3 - 1, 1.0 / 3, 1.0 / 3};
  for (double& v : want) v *= 3.0 / 2;  // g = 3, two rows
  EXPECT_TRUE(test::all_close(logits.grad(), Tensor::from(want, {2, 3}, DType::f64), 1e-12, 1e-12));
}

TEST(CrossEntropy, MatchesNegativeLogSoftmaxAtTargets) {
  Tensor logits = test::randn({4, 6, 10}, 51, 3.0, DType::f32);
  Tensor targets = Tensor::empty({4, 6}, DType::i32);
  Generator gen(52);
  gen.randint_(targets, 10);
  std::vector<double> ls = ops::log_softmax(logits).to_vector();
  double want = 0;
  for (std::int64_t r = 0; r < 24; ++r) want -= ls[r * 10 + static_cast<std::int64_t>(targets.at(r))];
  EXPECT_NEAR(ops::cross_entropy(logits, targets).item(), want / 24, 1e-5);
}

TEST(CrossEntropy, HugeLogitsStayFinite) {
  Tensor logits = Tensor::from({1000, -1000, -1000, 1000}, {2, 2}).set_requires_grad(true);
  Tensor loss = ops::cross_entropy(logits, Tensor::from_ints({0, 0}, {2}));
  EXPECT_NEAR(loss.item(), 1000.0, 1e-3);  // row 0 loses 0, row 1 loses 2000
  loss.backward();
  EXPECT_TRUE(test::all_close(logits.grad(), Tensor::from({0, 0, -0.5, 0.5}, {2, 2}), 1e-6));
}

TEST(CrossEntropy, IgnoredRowsAreSkipped) {
  Tensor logits = test::randn({4, 5}, 53);
  Tensor lx = logits.clone().set_requires_grad(true);
  Tensor loss = ops::cross_entropy(lx, Tensor::from_ints({1, -1, 3, -1}, {4}));
  // Only rows 0 and 2 count, and the mean divides by 2.
  std::vector<double> ls = ops::log_softmax(logits).to_vector();
  EXPECT_NEAR(loss.item(), -(ls[0 * 5 + 1] + ls[2 * 5 + 3]) / 2, 1e-12);
  loss.backward();
  std::vector<double> g = lx.grad().to_vector();
  for (int j = 0; j < 5; ++j) {
    EXPECT_EQ(g[1 * 5 + j], 0.0);
    EXPECT_EQ(g[3 * 5 + j], 0.0);
  }
  // A custom ignore_index that is also a valid class id: that class's rows are skipped.
  EXPECT_NEAR(ops::cross_entropy(logits, Tensor::from_ints({1, 3, 3, 3}, {4}), 3).item(), -ls[1], 1e-12);
}

TEST(CrossEntropy, AllIgnoredGivesZeroLossAndZeroGrads) {
  Tensor logits = test::randn({3, 4}, 54).set_requires_grad(true);
  Tensor loss = ops::cross_entropy(logits, Tensor::from_ints({-1, -1, -1}, {3}));
  EXPECT_EQ(loss.item(), 0.0);
  loss.backward();
  for (double v : logits.grad().to_vector()) EXPECT_EQ(v, 0.0);
}

TEST(CrossEntropy, Gradcheck) {
  auto f = [](const std::vector<Tensor>& in) { return ops::cross_entropy(in[0], in[1]); };
  EXPECT_TRUE(test::grads_ok(f, {test::randn({3, 5}, 55, 2.0), Tensor::from_ints({4, 0, 2}, {3})}));
  EXPECT_TRUE(test::grads_ok(f, {test::randn({1, 1}, 56), Tensor::from_ints({0}, {1})}));
  EXPECT_TRUE(test::grads_ok(f, {test::randn({2, 3, 4}, 57), Tensor::from_ints({0, 3, -1, 1, 1, -1}, {2, 3})}));
  EXPECT_TRUE(test::grads_ok(f, {test::randn({6}, 58), Tensor::from_ints({5}, {})}));
  EXPECT_TRUE(test::grads_ok(f, {test::randn({2, 1, 3}, 59), Tensor::from_ints({2, 0}, {2, 1})}));
}

TEST(CrossEntropy, GradcheckLargeMagnitude) {
  auto f = [](const std::vector<Tensor>& in) { return ops::cross_entropy(in[0], in[1]); };
  EXPECT_TRUE(test::grads_ok(f, {test::rand({4, 6}, 60, -50.0, 50.0), Tensor::from_ints({0, 5, 2, 3}, {4})}));
}

TEST(CrossEntropy, TypedErrors) {
  Tensor logits = Tensor::zeros({2, 3, 5});
  EXPECT_THROW(ops::cross_entropy(logits, Tensor::zeros({2, 3})), DTypeError);
  EXPECT_THROW(ops::cross_entropy(Tensor::arange(5), Tensor::from_ints({1}, {})), DTypeError);
  try {
    ops::cross_entropy(logits, Tensor::from_ints({0, 0, 0, 0, 0, 0, 0, 0}, {2, 4}));
    ADD_FAILURE() << "no ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("[2, 3, 5]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[2, 4]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ops::cross_entropy(logits, Tensor::from_ints(std::vector<std::int32_t>(30, 0), {2, 3, 5})), ShapeError);
  EXPECT_THROW(ops::cross_entropy(Tensor::scalar(1.0), Tensor::from_ints({0}, {})), ShapeError);
  Tensor t = Tensor::from_ints({0, 1, 5, 0, 0, 0}, {2, 3});
  try {
    ops::cross_entropy(logits, t);
    ADD_FAILURE() << "no ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("target 5"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ops::cross_entropy(logits, Tensor::from_ints({0, 1, -2, 0, 0, 0}, {2, 3})), ValueError);
}

}  // namespace
}  // namespace gattn
