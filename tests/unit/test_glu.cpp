// swiglu and glu_sigmoid: hand-computed values, both dtypes against a double reference (also far
// into both tails, where σ saturates), gradchecks over shapes with size-1 dims and each input alone,
// the composed ops' values, and the typed errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ops/elementwise.h"
#include "ops/glu.h"
#include "ops/unary.h"
#include "test_util.h"

namespace gattn {
namespace {

double sig(double a) { return 1.0 / (1.0 + std::exp(-a)); }

TEST(Glu, HandComputed) {
  // silu(0) = 0, silu(1) = σ(1) = 0.7310585786, silu(−2) = −2σ(−2) = −0.2384058440.
  Tensor a = Tensor::from({0, 1, -2}, {3}, DType::f64), u = Tensor::from({5, 2, -3}, {3}, DType::f64);
  EXPECT_TRUE(test::all_close(ops::swiglu(a, u),
                              Tensor::from({0, 2 * 0.7310585786300049, 3 * 0.2384058440442351}, {3}, DType::f64), 1e-15,
                              1e-15));
  EXPECT_TRUE(test::all_close(ops::glu_sigmoid(a, u),
                              Tensor::from({2.5, 2 * 0.7310585786300049, -3 * 0.11920292202211755}, {3}, DType::f64),
                              1e-15, 1e-15));
}

TEST(SwiGlu, HandComputedGradients) {
  // a = 1, u = 2, g = 1: du = silu(1) = σ(1), da = u·σ(1)(1 + 1·(1 − σ(1))).
  Tensor a = Tensor::from({1}, {1}, DType::f64).set_requires_grad(true);
  Tensor u = Tensor::from({2}, {1}, DType::f64).set_requires_grad(true);
  ops::swiglu(a, u).backward(Tensor::ones({1}, DType::f64));
  const double s = sig(1.0);
  EXPECT_NEAR(u.grad().at(0), s, 1e-15);
  EXPECT_NEAR(a.grad().at(0), 2 * s * (2 - s), 1e-15);
}

TEST(GluSigmoid, HandComputedGradients) {
  // a = 1, u = 2, g = 1: du = σ(1), da = u·σ(1)(1 − σ(1)).
  Tensor a = Tensor::from({1}, {1}, DType::f64).set_requires_grad(true);
  Tensor u = Tensor::from({2}, {1}, DType::f64).set_requires_grad(true);
  ops::glu_sigmoid(a, u).backward(Tensor::ones({1}, DType::f64));
  const double s = sig(1.0);
  EXPECT_NEAR(u.grad().at(0), s, 1e-15);
  EXPECT_NEAR(a.grad().at(0), 2 * s * (1 - s), 1e-15);
}

TEST(Glu, MatchesReferenceInBothDTypesAndTails) {
  for (DType dt : {DType::f32, DType::f64}) {
    Tensor a = test::rand({4, 50}, 3, -30.0, 30.0, dt), u = test::randn({4, 50}, 4, 1.0, dt);
    std::vector<double> av = a.to_vector(), uv = u.to_vector(), sw(av.size()), gs(av.size());
    for (std::size_t i = 0; i < av.size(); ++i) {
      sw[i] = av[i] * sig(av[i]) * uv[i];
      gs[i] = sig(av[i]) * uv[i];
    }
    const double tol = dt == DType::f32 ? 1e-6 : 1e-14;
    EXPECT_TRUE(test::all_close(ops::swiglu(a, u), Tensor::from(sw, a.shape(), DType::f64), tol, tol));
    EXPECT_TRUE(test::all_close(ops::glu_sigmoid(a, u), Tensor::from(gs, a.shape(), DType::f64), tol, tol));
    EXPECT_EQ(ops::swiglu(a, u).dtype(), dt);
  }
  // Far tails stay finite: σ(−1000) is 0, not NaN.
  Tensor a = Tensor::from({-1000, 1000}, {2}), u = Tensor::from({1, 1}, {2});
  EXPECT_EQ(ops::swiglu(a, u).to_vector(), (std::vector<double>{0, 1000}));
  EXPECT_EQ(ops::glu_sigmoid(a, u).to_vector(), (std::vector<double>{0, 1}));
}

TEST(Glu, MatchesTheComposedOps) {
  Tensor a = test::randn({3, 7}, 5), u = test::randn({3, 7}, 6);
  EXPECT_TRUE(test::all_close(ops::swiglu(a, u), a * ops::sigmoid(a) * u, 1e-15, 1e-14));
  EXPECT_TRUE(test::all_close(ops::glu_sigmoid(a, u), ops::sigmoid(a) * u, 1e-15, 1e-14));
}

// The output gate computes y ⊙ σ(u) as glu_sigmoid(u, y) (models/gates/output.cpp) and relies on it
// having the composed ops' exact bits, forward and both gradients, so fused and composed training agree.
TEST(GluSigmoid, BitwiseTheComposedOpsBothWays) {
  for (DType dt : {DType::f32, DType::f64}) {
    Tensor a = test::rand({5, 37}, 31, -25.0, 25.0, dt), u = test::randn({5, 37}, 32, 1.0, dt);
    Tensor g = test::randn({5, 37}, 33, 1.0, dt);
    Tensor a1 = a.detach().set_requires_grad(true), u1 = u.detach().set_requires_grad(true);
    Tensor a2 = a.detach().set_requires_grad(true), u2 = u.detach().set_requires_grad(true);
    const Tensor fused = ops::glu_sigmoid(a1, u1), composed = u2 * ops::sigmoid(a2);
    EXPECT_EQ(fused.to_vector(), composed.to_vector()) << dtype_name(dt);
    fused.backward(g);
    composed.backward(g);
    EXPECT_EQ(a1.grad().to_vector(), a2.grad().to_vector()) << dtype_name(dt);
    EXPECT_EQ(u1.grad().to_vector(), u2.grad().to_vector()) << dtype_name(dt);
  }
}

TEST(Glu, Gradcheck) {
  for (glu::Activation act : {glu::Activation::silu, glu::Activation::sigmoid}) {
    auto f = [act](const std::vector<Tensor>& in) { return ops::glu(in[0], in[1], act); };
    for (const Shape& s : {Shape{1}, Shape{3, 4}, Shape{1, 5}, Shape{2, 1, 3}, Shape{1, 1}}) {
      EXPECT_TRUE(test::grads_ok(f, {test::randn(s, 21, 3.0), test::randn(s, 22)})) << shape_str(s);
      EXPECT_TRUE(test::grads_ok(f, {test::randn(s, 23, 3.0), test::randn(s, 24)}, {}, {0})) << shape_str(s);
      EXPECT_TRUE(test::grads_ok(f, {test::randn(s, 25, 3.0), test::randn(s, 26)}, {}, {1})) << shape_str(s);
    }
    // Large gates, where σ saturates.
    EXPECT_TRUE(test::grads_ok(f, {test::rand({2, 6}, 27, -20.0, 20.0), test::randn({2, 6}, 28)}));
  }
}

TEST(Glu, TypedErrors) {
  Tensor a = Tensor::zeros({2, 3});
  for (glu::Activation act : {glu::Activation::silu, glu::Activation::sigmoid}) {
    const std::string name = act == glu::Activation::silu ? "swiglu" : "glu_sigmoid";
    const std::string msg = test::error_of([&] { ops::glu(a, Tensor::zeros({3}), act); });
    EXPECT_NE(msg.find(name + ": gate and up must have the same shape"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[2, 3]"), std::string::npos) << msg;
    EXPECT_THROW(ops::glu(a, Tensor::zeros({3, 2}), act), ShapeError);
    EXPECT_THROW(ops::glu(a, Tensor::zeros({2, 3}, DType::f64), act), DTypeError);
    EXPECT_THROW(ops::glu(Tensor::from_ints({1, 2}, {2}), Tensor::from_ints({1, 2}, {2}), act), DTypeError);
    EXPECT_THROW(ops::glu(a, Tensor(), act), ValueError);
    EXPECT_NE(test::error_of([&] { ops::glu(Tensor(), a, act); }).find(name), std::string::npos);
  }
}

}  // namespace
}  // namespace gattn
