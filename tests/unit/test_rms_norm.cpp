// rms_norm: hand-computed values (plain and zero-centred weight, no weight), rows against a double
// reference, large magnitudes, gradchecks (size-1 dims, each input alone), a deterministic and exact
// dweight over many rows, and the typed errors.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/nn_functional.h"
#include "test_util.h"

namespace gattn {
namespace {

// Reference in double: y = x / √(mean(x²) + eps) ⊙ s, s = w or 1 + w (empty w: s = 1).
std::vector<double> reference(const std::vector<double>& x, const std::vector<double>& w, std::size_t C, double eps,
                              bool offset) {
  std::vector<double> y(x.size());
  for (std::size_t r = 0; r < x.size() / C; ++r) {
    double ms = 0;
    for (std::size_t j = 0; j < C; ++j) ms += x[r * C + j] * x[r * C + j];
    ms /= static_cast<double>(C);
    for (std::size_t j = 0; j < C; ++j) {
      const double s = w.empty() ? 1.0 : (offset ? 1.0 + w[j] : w[j]);
      y[r * C + j] = x[r * C + j] / std::sqrt(ms + eps) * s;
    }
  }
  return y;
}

TEST(RmsNorm, HandComputed) {
  // mean(x²) = (1 + 4 + 9 + 16)/4 = 7.5, so x̂ = x/√7.5 (eps = 0).
  Tensor x = Tensor::from({1, 2, 3, 4}, {1, 4}, DType::f64);
  Tensor w = Tensor::from({0.5, 1, 2, -1}, {4}, DType::f64);
  const double r = 1.0 / std::sqrt(7.5);
  EXPECT_TRUE(test::all_close(ops::rms_norm(x, Tensor(), 0.0),
                              Tensor::from({r, 2 * r, 3 * r, 4 * r}, {1, 4}, DType::f64), 1e-15, 1e-15));
  EXPECT_TRUE(test::all_close(ops::rms_norm(x, w, 0.0),
                              Tensor::from({0.5 * r, 2 * r, 6 * r, -4 * r}, {1, 4}, DType::f64), 1e-15, 1e-15));
  // offset: the scale is 1 + w = [1.5, 2, 3, 0].
  EXPECT_TRUE(test::all_close(ops::rms_norm(x, w, 0.0, true),
                              Tensor::from({1.5 * r, 4 * r, 9 * r, 0}, {1, 4}, DType::f64), 1e-15, 1e-15));
  // The default eps is 1e-6 (Llama's).
  const double re = 1.0 / std::sqrt(7.5 + 1e-6);
  EXPECT_TRUE(test::all_close(ops::rms_norm(x, Tensor()),
                              Tensor::from({re, 2 * re, 3 * re, 4 * re}, {1, 4}, DType::f64), 1e-15, 1e-15));
}

TEST(RmsNorm, RowsMatchReferenceInBothDTypes) {
  for (DType dt : {DType::f32, DType::f64})
    for (bool offset : {false, true}) {
      Tensor x = test::randn({2, 3, 40}, 5, 2.0, dt);
      Tensor w = test::randn({40}, 6, 1.0, dt);
      Tensor y = ops::rms_norm(x, w, 1e-5, offset);
      EXPECT_EQ(y.shape(), x.shape());
      EXPECT_EQ(y.dtype(), dt);
      const double tol = dt == DType::f32 ? 2e-6 : 1e-14;
      EXPECT_TRUE(test::all_close(
          y, Tensor::from(reference(x.to_vector(), w.to_vector(), 40, 1e-5, offset), x.shape(), DType::f64), tol, tol))
          << dtype_name(dt) << " offset " << offset;
    }
}

TEST(RmsNorm, WithoutWeightMatchesUnitWeightAndZeroOffsetWeight) {
  Tensor x = test::randn({3, 5}, 8);
  Tensor plain = ops::rms_norm(x, Tensor());
  EXPECT_TRUE(test::all_close(plain, ops::rms_norm(x, Tensor::ones({5}, DType::f64)), 0, 0));
  EXPECT_TRUE(test::all_close(plain, ops::rms_norm(x, Tensor::zeros({5}, DType::f64), 1e-6, true), 0, 0));
}

TEST(RmsNorm, LargeAndTinyMagnitudes) {
  // The scale cancels: 1e6·x and x normalise to the same values in f32 (no overflow of Σx²), and a
  // zero row gives zeros (eps keeps 1/rms finite).
  Tensor x = test::randn({2, 16}, 9, 1.0, DType::f32);
  Tensor big = Tensor::from(x.to_vector(), x.shape(), DType::f32);
  for (std::size_t i = 0; i < 32; ++i) big.data<float>()[i] *= 1e6f;
  EXPECT_TRUE(test::all_close(ops::rms_norm(big, Tensor(), 0.0), ops::rms_norm(x, Tensor(), 0.0), 1e-6, 1e-5));
  for (double v : ops::rms_norm(Tensor::zeros({1, 8}), Tensor()).to_vector()) EXPECT_EQ(v, 0.0);
}

TEST(RmsNorm, GradcheckAllInputs) {
  for (bool offset : {false, true}) {
    auto f = [offset](const std::vector<Tensor>& in) { return ops::rms_norm(in[0], in[1], 1e-6, offset); };
    for (const Shape& s : {Shape{3, 4}, Shape{1, 5}, Shape{2, 1, 3}, Shape{6}, Shape{2, 1}, Shape{1, 1}}) {
      const std::int64_t C = s.back();
      EXPECT_TRUE(test::grads_ok(f, {test::randn(s, 21, 2.0), test::randn({C}, 22)}))
          << shape_str(s) << " offset " << offset;
    }
  }
}

TEST(RmsNorm, GradcheckLargeMagnitudeNoWeightAndEachInputAlone) {
  auto f = [](const std::vector<Tensor>& in) { return ops::rms_norm(in[0], in[1], 1e-6, true); };
  EXPECT_TRUE(test::grads_ok(f, {test::rand({3, 7}, 24, -100.0, 100.0), test::randn({7}, 25)}));
  EXPECT_TRUE(test::grads_ok([](const std::vector<Tensor>& in) { return ops::rms_norm(in[0], Tensor()); },
                             {test::randn({4, 3}, 27)}));
  Tensor x = test::randn({5, 4}, 28), w = test::randn({4}, 29);
  EXPECT_TRUE(test::grads_ok(f, {x, w}, {}, {1}));
  EXPECT_TRUE(test::grads_ok(f, {x, w}, {}, {0}));
}

TEST(RmsNorm, WeightGradOverManyRowsIsExactAndDeterministic) {
  // 300 rows span several backward chunks; dweight must be Σ g ⊙ x̂ and two runs agree bit for bit.
  const std::int64_t R = 300, C = 24;
  Tensor x = test::randn({R, C}, 31, 1.5, DType::f32);
  Tensor g = test::randn({R, C}, 32, 1.0, DType::f32);
  auto run = [&] {
    Tensor w = test::randn({C}, 33, 1.0, DType::f32).set_requires_grad(true);
    ops::rms_norm(x, w, 1e-6, true).backward(g);
    return w.grad();
  };
  Tensor dw1 = run(), dw2 = run();
  EXPECT_EQ(dw1.to_vector(), dw2.to_vector());
  std::vector<double> xv = x.to_vector(), gv = g.to_vector();
  std::vector<double> xhat = reference(xv, {}, C, 1e-6, false);
  for (std::int64_t j = 0; j < C; ++j) {
    double s = 0;
    for (std::int64_t r = 0; r < R; ++r) s += gv[r * C + j] * xhat[r * C + j];
    EXPECT_NEAR(dw1.at(j), s, 1e-3) << j;
  }
}

TEST(RmsNorm, TypedErrors) {
  Tensor x = Tensor::zeros({2, 3});
  const std::string msg = test::error_of([&] { ops::rms_norm(x, Tensor::ones({4})); });
  EXPECT_NE(msg.find("rms_norm"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[2, 3]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[4]"), std::string::npos) << msg;
  EXPECT_THROW(ops::rms_norm(x, Tensor::ones({4})), ShapeError);
  EXPECT_THROW(ops::rms_norm(x, Tensor::ones({1, 3})), ShapeError);
  EXPECT_THROW(ops::rms_norm(x, Tensor::ones({3}, DType::f64)), DTypeError);
  EXPECT_THROW(ops::rms_norm(Tensor::arange(3), Tensor()), DTypeError);
  EXPECT_THROW(ops::rms_norm(Tensor::scalar(1.0), Tensor()), ShapeError);
  EXPECT_THROW(ops::rms_norm(Tensor::zeros({2, 0}), Tensor()), ShapeError);
  EXPECT_THROW(ops::rms_norm(x, Tensor(), -1.0), ValueError);
  EXPECT_THROW(ops::rms_norm(Tensor(), Tensor()), ValueError);
  EXPECT_NE(test::error_of([&] { ops::rms_norm(x, Tensor(), std::nan("")); }).find("rms_norm"), std::string::npos);
}

}  // namespace
}  // namespace gattn
