// softmax / log_softmax: hand-computed values, stability at ±1000, fully masked rows, gradchecks
// over shapes with size-1 dims, and the typed errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ops/nn_functional.h"
#include "test_util.h"

namespace gattn {
namespace {

TEST(Softmax, HandComputedValues) {
  Tensor x = Tensor::from({1, 2, 3}, {3}, DType::f64);
  // e^1, e^2, e^3 over their sum 30.19287485...
  EXPECT_TRUE(test::all_close(
      ops::softmax(x), Tensor::from({0.09003057317038046, 0.24472847105479764, 0.6652409557748219}, {3}, DType::f64),
      1e-12, 1e-12));
  // x − log(e^1 + e^2 + e^3) = x − 3.40760596444438
  EXPECT_TRUE(test::all_close(ops::log_softmax(x),
                              Tensor::from({-2.40760596444438, -1.40760596444438, -0.40760596444438}, {3}, DType::f64),
                              1e-12, 1e-12));
}

TEST(Softmax, RowsAreIndependentAndSumToOne) {
  Tensor x = test::randn({2, 3, 5}, 7, 3.0, DType::f32);
  Tensor y = ops::softmax(x);
  EXPECT_EQ(y.shape(), x.shape());
  EXPECT_EQ(y.dtype(), DType::f32);
  std::vector<double> v = y.to_vector();
  for (int r = 0; r < 6; ++r) {
    double s = 0;
    for (int j = 0; j < 5; ++j) {
      EXPECT_GT(v[r * 5 + j], 0.0);
      s += v[r * 5 + j];
    }
    EXPECT_NEAR(s, 1.0, 1e-6);
  }
  // Row 1 alone gives the same row.
  std::vector<double> xv = x.to_vector();
  Tensor row = Tensor::from(std::vector<double>(xv.begin() + 5, xv.begin() + 10), {5});
  EXPECT_TRUE(
      test::all_close(ops::softmax(row), Tensor::from(std::vector<double>(v.begin() + 5, v.begin() + 10), {5})));
}

TEST(Softmax, F32MatchesF64) {
  Tensor x = test::randn({4, 33}, 3, 5.0);
  EXPECT_TRUE(test::all_close(ops::softmax(x.to(DType::f32)), ops::softmax(x), 1e-6, 1e-5));
  EXPECT_TRUE(test::all_close(ops::log_softmax(x.to(DType::f32)), ops::log_softmax(x), 1e-5, 1e-5));
}

TEST(Softmax, HugeLogitsStayFinite) {
  Tensor x = Tensor::from({1000, -1000, 999}, {3}, DType::f32);
  EXPECT_TRUE(test::all_close(ops::softmax(x), Tensor::from({0.7310585786, 0.0, 0.2689414214}, {3}), 1e-6, 1e-6));
  EXPECT_TRUE(test::all_close(ops::log_softmax(x), Tensor::from({-0.3132616875, -2000.3132616875, -1.3132616875}, {3}),
                              1e-4, 1e-6));
  Tensor xg = x.to(DType::f64).set_requires_grad(true);
  ops::log_softmax(xg).backward(Tensor::from({1, 0, 0}, {3}, DType::f64));
  for (double v : xg.grad().to_vector()) EXPECT_TRUE(std::isfinite(v));
}

TEST(Softmax, FullyMaskedRowIsZeroNotNaN) {
  const double inf = std::numeric_limits<double>::infinity();
  Tensor x = Tensor::from({-inf, -inf, 1, -inf}, {2, 2}, DType::f64);
  EXPECT_EQ(ops::softmax(x).to_vector(), (std::vector<double>{0, 0, 1, 0}));
  std::vector<double> ls = ops::log_softmax(x).to_vector();
  EXPECT_EQ(ls[0], -inf);
  EXPECT_EQ(ls[1], -inf);
  EXPECT_EQ(ls[2], 0.0);
}

TEST(Softmax, GradcheckSoftmax) {
  for (const Shape& s : {Shape{4, 5}, Shape{1, 1}, Shape{2, 1, 3}, Shape{3, 1}, Shape{7}})
    EXPECT_TRUE(
        test::grads_ok([](const std::vector<Tensor>& in) { return ops::softmax(in[0]); }, {test::randn(s, 11, 2.0)}))
        << shape_str(s);
}

TEST(Softmax, GradcheckLogSoftmax) {
  for (const Shape& s : {Shape{4, 5}, Shape{1, 1}, Shape{2, 1, 3}, Shape{3, 1}, Shape{7}})
    EXPECT_TRUE(test::grads_ok([](const std::vector<Tensor>& in) { return ops::log_softmax(in[0]); },
                               {test::randn(s, 12, 2.0)}))
        << shape_str(s);
}

TEST(Softmax, GradcheckLargeMagnitude) {
  // Logits spread over ±40: exp would overflow without the max shift (in f32 at least).
  Tensor x = test::rand({3, 6}, 13, -40.0, 40.0);
  EXPECT_TRUE(test::grads_ok([](const std::vector<Tensor>& in) { return ops::softmax(in[0]); }, {x}));
  EXPECT_TRUE(test::grads_ok([](const std::vector<Tensor>& in) { return ops::log_softmax(in[0]); }, {x}));
}

TEST(Softmax, TypedErrors) {
  EXPECT_THROW(ops::softmax(Tensor::scalar(1.0)), ShapeError);
  EXPECT_THROW(ops::log_softmax(Tensor::scalar(1.0)), ShapeError);
  EXPECT_THROW(ops::softmax(Tensor::arange(3)), DTypeError);
  EXPECT_THROW(ops::log_softmax(Tensor::arange(3)), DTypeError);
}

}  // namespace
}  // namespace gattn
