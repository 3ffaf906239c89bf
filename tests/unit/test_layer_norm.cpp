// layer_norm: hand-computed values, a large mean offset, gradchecks (with and without the affine
// part, size-1 dims), a deterministic and exact dweight/dbias over many rows, and the typed errors.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/nn_functional.h"
#include "test_util.h"

namespace gattn {
namespace {

// Reference in double: y = (x − μ)/√(σ² + eps) ⊙ w + b per row.
std::vector<double> reference(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& b,
                              std::size_t C, double eps) {
  std::vector<double> y(x.size());
  for (std::size_t r = 0; r < x.size() / C; ++r) {
    double mu = 0, var = 0;
    for (std::size_t j = 0; j < C; ++j) mu += x[r * C + j];
    mu /= static_cast<double>(C);
    for (std::size_t j = 0; j < C; ++j) var += (x[r * C + j] - mu) * (x[r * C + j] - mu);
    var /= static_cast<double>(C);
    for (std::size_t j = 0; j < C; ++j) y[r * C + j] = (x[r * C + j] - mu) / std::sqrt(var + eps) * w[j] + b[j];
  }
  return y;
}

TEST(LayerNorm, HandComputedUnitAffine) {
  // μ = 2, σ² = 2/3: y = (x − 2)/√(2/3 + eps) = ±1.224744871 (eps = 0) and 0.
  Tensor x = Tensor::from({1, 2, 3}, {3}, DType::f64);
  Tensor w = Tensor::ones({3}, DType::f64), b = Tensor::zeros({3}, DType::f64);
  EXPECT_TRUE(test::all_close(ops::layer_norm(x, w, b, 0.0),
                              Tensor::from({-1.224744871391589, 0, 1.224744871391589}, {3}, DType::f64), 1e-12, 1e-12));
  const double s = 1.0 / std::sqrt(2.0 / 3.0 + 1e-5);
  EXPECT_TRUE(test::all_close(ops::layer_norm(x, w, b), Tensor::from({-s, 0, s}, {3}, DType::f64), 1e-12, 1e-12));
}

TEST(LayerNorm, AffineAndRowsMatchReference) {
  Tensor x = test::randn({2, 3, 8}, 5, 2.0, DType::f32);
  Tensor w = test::randn({8}, 6, 1.0, DType::f32), b = test::randn({8}, 7, 1.0, DType::f32);
  Tensor y = ops::layer_norm(x, w, b, 1e-5);
  EXPECT_EQ(y.shape(), x.shape());
  EXPECT_TRUE(test::all_close(
      y, Tensor::from(reference(x.to_vector(), w.to_vector(), b.to_vector(), 8, 1e-5), x.shape()), 1e-5, 1e-5));
}

TEST(LayerNorm, LargeMeanOffsetStaysAccurate) {
  // 1e4 + [1, 2, 3] in f32: E[x²] − μ² would lose every digit; the centred variance does not.
  Tensor x = Tensor::from({10001, 10002, 10003}, {1, 3}, DType::f32);
  Tensor y = ops::layer_norm(x, Tensor::ones({3}), Tensor::zeros({3}), 0.0);
  EXPECT_TRUE(test::all_close(y, Tensor::from({-1.224744871, 0, 1.224744871}, {1, 3}), 1e-5, 1e-5));
  Tensor big = Tensor::from({1000, -1000, 0, 500}, {1, 4}, DType::f32);
  for (double v : ops::layer_norm(big, Tensor::ones({4}), Tensor::zeros({4})).to_vector())
    EXPECT_TRUE(std::isfinite(v));
}

TEST(LayerNorm, WithoutAffineMatchesUnitAffine) {
  Tensor x = test::randn({3, 5}, 8);
  EXPECT_TRUE(test::all_close(ops::layer_norm(x, Tensor(), Tensor()),
                              ops::layer_norm(x, Tensor::ones({5}, DType::f64), Tensor::zeros({5}, DType::f64)), 1e-14,
                              1e-14));
}

TEST(LayerNorm, GradcheckAllInputs) {
  auto f = [](const std::vector<Tensor>& in) { return ops::layer_norm(in[0], in[1], in[2]); };
  for (const Shape& s : {Shape{3, 4}, Shape{1, 5}, Shape{2, 1, 3}, Shape{6}, Shape{2, 1}}) {
    const std::int64_t C = s.back();
    EXPECT_TRUE(test::grads_ok(f, {test::randn(s, 21, 2.0), test::randn({C}, 22), test::randn({C}, 23)}))
        << shape_str(s);
  }
}

TEST(LayerNorm, GradcheckLargeMagnitudeAndNoAffine) {
  // Inputs around ±100 with a spread of 30: the normalised values are O(1) and so are the grads.
  Tensor x = test::rand({3, 7}, 24, -100.0, 100.0);
  EXPECT_TRUE(test::grads_ok([](const std::vector<Tensor>& in) { return ops::layer_norm(in[0], in[1], in[2]); },
                             {x, test::randn({7}, 25), test::randn({7}, 26)}));
  EXPECT_TRUE(test::grads_ok([](const std::vector<Tensor>& in) { return ops::layer_norm(in[0], Tensor(), Tensor()); },
                             {test::randn({4, 3}, 27)}));
}

TEST(LayerNorm, GradcheckOnlyXOrOnlyParams) {
  // Only some inputs need a gradient: the backward skips the others.
  Tensor x = test::randn({5, 4}, 28), w = test::randn({4}, 29), b = test::randn({4}, 30);
  auto f = [](const std::vector<Tensor>& in) { return ops::layer_norm(in[0], in[1], in[2]); };
  EXPECT_TRUE(test::grads_ok(f, {x, w, b}, {}, {1, 2}));
  EXPECT_TRUE(test::grads_ok(f, {x, w, b}, {}, {0}));
}

TEST(LayerNorm, ParamGradsOverManyRowsAreExactAndDeterministic) {
  // 300 rows span several backward chunks; dbias must equal the plain column sums of g and
  // dweight Σ g ⊙ x̂, and two runs must agree bit for bit.
  const std::int64_t R = 300, C = 24;
  Tensor x = test::randn({R, C}, 31, 1.5, DType::f32);
  Tensor g = test::randn({R, C}, 32, 1.0, DType::f32);
  auto run = [&](Tensor& dw, Tensor& db) {
    Tensor w = test::randn({C}, 33, 1.0, DType::f32).set_requires_grad(true);
    Tensor b = Tensor::zeros({C}).set_requires_grad(true);
    ops::layer_norm(x, w, b).backward(g);
    dw = w.grad();
    db = b.grad();
  };
  Tensor dw1, db1, dw2, db2;
  run(dw1, db1);
  run(dw2, db2);
  EXPECT_EQ(dw1.to_vector(), dw2.to_vector());
  EXPECT_EQ(db1.to_vector(), db2.to_vector());

  std::vector<double> xv = x.to_vector(), gv = g.to_vector();
  std::vector<double> xhat = reference(xv, std::vector<double>(C, 1.0), std::vector<double>(C, 0.0), C, 1e-5);
  for (std::int64_t j = 0; j < C; ++j) {
    double sw = 0, sb = 0;
    for (std::int64_t r = 0; r < R; ++r) {
      sw += gv[r * C + j] * xhat[r * C + j];
      sb += gv[r * C + j];
    }
    EXPECT_NEAR(dw1.at(j), sw, 1e-3) << j;
    EXPECT_NEAR(db1.at(j), sb, 1e-3) << j;
  }
}

TEST(LayerNorm, TypedErrors) {
  Tensor x = Tensor::zeros({2, 3});
  try {
    ops::layer_norm(x, Tensor::ones({4}), Tensor::zeros({3}));
    ADD_FAILURE() << "no ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("[2, 3]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[4]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ops::layer_norm(x, Tensor::ones({3}), Tensor::zeros({1, 3})), ShapeError);
  EXPECT_THROW(ops::layer_norm(x, Tensor::ones({3}, DType::f64), Tensor::zeros({3})), DTypeError);
  EXPECT_THROW(ops::layer_norm(Tensor::arange(3), Tensor(), Tensor()), DTypeError);
  EXPECT_THROW(ops::layer_norm(Tensor::scalar(1.0), Tensor(), Tensor()), ShapeError);
  EXPECT_THROW(ops::layer_norm(Tensor::zeros({2, 0}), Tensor(), Tensor()), ShapeError);
  EXPECT_THROW(ops::layer_norm(x, Tensor(), Tensor(), -1.0), ValueError);
}

}  // namespace
}  // namespace gattn
