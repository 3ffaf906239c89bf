// masked_fill: element masks, broadcast masks (row, column, scalar, a causal mask over batch and
// heads), gradchecks, and the typed errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ops/nn_functional.h"
#include "test_util.h"

namespace gattn {
namespace {

TEST(MaskedFill, ElementMask) {
  Tensor x = Tensor::from({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor y = ops::masked_fill(x, Tensor::from_ints({0, 1, 0, 2, 0, -1}, {2, 3}), -7.5);
  EXPECT_EQ(y.to_vector(), (std::vector<double>{1, -7.5, 3, -7.5, 5, -7.5}));
  EXPECT_EQ(x.to_vector(), (std::vector<double>{1, 2, 3, 4, 5, 6}));  // x untouched
}

TEST(MaskedFill, BroadcastMasks) {
  Tensor x = Tensor::from({1, 2, 3, 4, 5, 6}, {2, 3}, DType::f64);
  EXPECT_EQ(ops::masked_fill(x, Tensor::from_ints({1, 0, 1}, {1, 3}), 0).to_vector(),
            (std::vector<double>{0, 2, 0, 0, 5, 0}));
  EXPECT_EQ(ops::masked_fill(x, Tensor::from_ints({1, 0, 1}, {3}), 0).to_vector(),
            (std::vector<double>{0, 2, 0, 0, 5, 0}));
  EXPECT_EQ(ops::masked_fill(x, Tensor::from_ints({0, 1}, {2, 1}), 9).to_vector(),
            (std::vector<double>{1, 2, 3, 9, 9, 9}));
  EXPECT_EQ(ops::masked_fill(x, Tensor::from_ints({1}, {}), 9).to_vector(), (std::vector<double>(6, 9)));
  EXPECT_EQ(ops::masked_fill(x, Tensor::from_ints({0}, {1, 1}), 9).to_vector(), x.to_vector());
}

TEST(MaskedFill, CausalMaskThenSoftmax) {
  // The attention use: a [T, T] upper-triangle mask broadcast over [B, H, T, T], filled with −inf.
  const std::int64_t T = 4;
  std::vector<std::int32_t> m(T * T);
  for (std::int64_t i = 0; i < T; ++i)
    for (std::int64_t j = 0; j < T; ++j) m[i * T + j] = j > i;
  Tensor scores = test::randn({2, 3, T, T}, 61, 1.0, DType::f32);
  Tensor masked = ops::masked_fill(scores, Tensor::from_ints(m, {T, T}), -std::numeric_limits<double>::infinity());
  std::vector<double> p = ops::softmax(masked).to_vector();
  for (std::int64_t r = 0; r < 2 * 3 * T; ++r) {
    const std::int64_t i = r % T;
    double s = 0;
    for (std::int64_t j = 0; j < T; ++j) {
      if (j > i) {
        EXPECT_EQ(p[r * T + j], 0.0);
      }
      s += p[r * T + j];
    }
    EXPECT_NEAR(s, 1.0, 1e-6);
  }
}

TEST(MaskedFill, Gradcheck) {
  auto f = [](const std::vector<Tensor>& in) { return ops::masked_fill(in[0], in[1], 3.0); };
  EXPECT_TRUE(test::grads_ok(f, {test::randn({2, 3}, 62), Tensor::from_ints({1, 0, 0, 1, 1, 0}, {2, 3})}));
  EXPECT_TRUE(test::grads_ok(f, {test::randn({2, 1, 3}, 63), Tensor::from_ints({0, 1, 0}, {3})}));
  EXPECT_TRUE(test::grads_ok(f, {test::randn({3, 2, 2}, 64), Tensor::from_ints({1, 0, 1}, {3, 1, 1})}));
  EXPECT_TRUE(test::grads_ok(f, {test::randn({1, 1}, 65), Tensor::from_ints({0}, {})}));
}

TEST(MaskedFill, GradientZeroWhereFilled) {
  Tensor x = Tensor::from({1, 2, 3, 4}, {2, 2}).set_requires_grad(true);
  ops::masked_fill(x, Tensor::from_ints({1, 0}, {1, 2}), 0).backward(Tensor::from({10, 20, 30, 40}, {2, 2}));
  EXPECT_EQ(x.grad().to_vector(), (std::vector<double>{0, 20, 0, 40}));
}

TEST(MaskedFill, TypedErrors) {
  Tensor x = Tensor::zeros({2, 3});
  EXPECT_THROW(ops::masked_fill(x, Tensor::zeros({2, 3}), 0), DTypeError);
  EXPECT_THROW(ops::masked_fill(Tensor::arange(3), Tensor::from_ints({1, 0, 1}, {3}), 0), DTypeError);
  try {
    ops::masked_fill(x, Tensor::from_ints({0, 0, 0, 0, 0, 0}, {3, 2}), 0);
    ADD_FAILURE() << "no ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("[2, 3]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[3, 2]"), std::string::npos) << e.what();
  }
  // A mask with more elements than x would change the output's shape: rejected.
  EXPECT_THROW(ops::masked_fill(x, Tensor::from_ints(std::vector<std::int32_t>(12, 0), {2, 2, 3}), 0), ShapeError);
}

}  // namespace
}  // namespace gattn
