// Elementwise functions (ops/unary.h): known values, stable tails of sigmoid/log_sigmoid, gradchecks
// on awkward shapes and large inputs, f32 against f64, the threaded path, and dtype errors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/autograd/node.h"
#include "ops/cpu/fast_math.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/unary.h"
#include "test_util.h"

namespace gattn {

namespace {

using UnaryFn = Tensor (*)(const Tensor&);

struct NamedFn {
  const char* name;
  UnaryFn fn;
  double low, high;  // an input range where the function is smooth and finite
};

// Every function with a range that exercises its interesting region; the saturating ones reach
// far into their tails, log and sqrt stay positive.
const std::vector<NamedFn>& all_fns() {
  static const std::vector<NamedFn> fns = {
      {"exp", ops::exp, -5, 5},
      {"log", ops::log, 0.1, 5},
      {"tanh", ops::tanh, -30, 30},
      {"sigmoid", ops::sigmoid, -30, 30},
      {"log_sigmoid", ops::log_sigmoid, -30, 30},
      {"relu", ops::relu, -2, 2},
      {"gelu", ops::gelu, -6, 6},
      {"square", ops::square, -3, 3},
      {"sqrt", ops::sqrt, 0.1, 5},
      {"heaviside", ops::heaviside, -2, 2},
  };
  return fns;
}

Tensor f64(const std::vector<double>& v) { return Tensor::from(v, {static_cast<std::int64_t>(v.size())}, DType::f64); }

}  // namespace

TEST(UnaryForward, KnownValues) {
  EXPECT_TRUE(test::all_close(ops::exp(f64({0, 1, -2})), f64({1, 2.718281828459045, 0.1353352832366127}), 0, 1e-15));
  EXPECT_TRUE(
      test::all_close(ops::log(f64({1, 2.718281828459045, 0.5})), f64({0, 1, -0.6931471805599453}), 1e-15, 1e-15));
  EXPECT_TRUE(
      test::all_close(ops::tanh(f64({0, 0.5, -2})), f64({0, 0.46211715726000974, -0.9640275800758169}), 0, 1e-15));
  EXPECT_TRUE(
      test::all_close(ops::sigmoid(f64({0, 2, -2})), f64({0.5, 0.8807970779778823, 0.11920292202211755}), 0, 1e-15));
  EXPECT_TRUE(test::all_close(ops::log_sigmoid(f64({0, 2, -2})),
                              f64({-0.6931471805599453, -0.1269280110429725, -2.1269280110429727}), 0, 1e-15));
  EXPECT_EQ(ops::relu(f64({-1, 0, 2.5})).to_vector(), (std::vector<double>{0, 0, 2.5}));
  EXPECT_EQ(ops::heaviside(f64({-1, 0, 1e-300, 2.5})).to_vector(), (std::vector<double>{0, 0, 1, 1}));
  // GPT-2's tanh-approximate GELU; gelu(−x) = gelu(x) − x.
  EXPECT_TRUE(test::all_close(ops::gelu(f64({1.0, -1.0, 0.0, 3.0})),
                              f64({0.8411919906082768, -0.15880800939172324, 0.0, 2.996362607918227}), 0, 1e-14));
  EXPECT_EQ(ops::square(f64({-3, 0.5})).to_vector(), (std::vector<double>{9, 0.25}));
  EXPECT_EQ(ops::sqrt(f64({4, 2.25, 0})).to_vector(), (std::vector<double>{2, 1.5, 0}));
}

TEST(UnaryForward, SigmoidFamilyIsStableAtExtremes) {
  for (DType dt : {DType::f32, DType::f64}) {
    Tensor x = Tensor::from({-1000, -30, 30, 1000}, {4}, dt);
    std::vector<double> s = ops::sigmoid(x).to_vector();
    EXPECT_EQ(s[0], 0.0) << dtype_name(dt);
    EXPECT_NEAR(s[1], 9.357622968839299e-14, 1e-19);
    EXPECT_NEAR(s[2], 1.0, 1e-7);
    EXPECT_EQ(s[3], 1.0);
    std::vector<double> ls = ops::log_sigmoid(x).to_vector();
    for (double v : ls) EXPECT_TRUE(std::isfinite(v)) << dtype_name(dt);
    EXPECT_EQ(ls[0], -1000.0);
    EXPECT_NEAR(ls[1], -30.000000000000092, 1e-5);
    EXPECT_NEAR(ls[2], -9.357622968840175e-14, 1e-19);
    EXPECT_EQ(ls[3], 0.0);
    std::vector<double> t = ops::tanh(x).to_vector();
    EXPECT_EQ(t[0], -1.0);
    EXPECT_EQ(t[3], 1.0);
    std::vector<double> g = ops::gelu(x).to_vector();
    EXPECT_EQ(g[0], 0.0);  // −0 compares equal
    EXPECT_EQ(g[3], 1000.0);
  }
  // In f64 the small tail of log σ keeps its relative precision (no 1 − σ cancellation).
  EXPECT_NEAR(ops::log_sigmoid(f64({40})).item() / -4.248354255291589e-18, 1.0, 1e-12);
}

TEST(UnaryForward, GradientsAtExtremesAreFinite) {
  Tensor x = Tensor::from({-1000, -50, 50, 1000}, {4}, DType::f64).set_requires_grad(true);
  ops::sum(ops::log_sigmoid(x)).backward();
  EXPECT_EQ(x.grad().to_vector(), (std::vector<double>{1, 1, std::exp(-50.0) / (1 + std::exp(-50.0)), 0}));
  for (UnaryFn fn : {ops::sigmoid, ops::tanh, ops::gelu}) {
    x.zero_grad();
    ops::sum(fn(x)).backward();
    for (double v : x.grad().to_vector()) EXPECT_TRUE(std::isfinite(v));
  }
  EXPECT_EQ(x.grad().at(0), 0.0);  // gelu'(−1000)
  EXPECT_EQ(x.grad().at(3), 1.0);  // gelu'(1000)
}

TEST(UnaryForward, NanPropagatesAndEmptyAndScalarShapes) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const auto& f : all_fns()) {
    EXPECT_TRUE(std::isnan(f.fn(f64({nan})).item())) << f.name;
    Tensor e = f.fn(Tensor::zeros({0, 3}, DType::f64));
    EXPECT_EQ(e.shape(), (Shape{0, 3})) << f.name;
    Tensor s = f.fn(Tensor::scalar(0.5, DType::f64));
    EXPECT_EQ(s.dim(), 0) << f.name;
  }
}

TEST(UnaryForward, F32MatchesF64) {
  for (const auto& f : all_fns()) {
    Tensor x32 = test::rand({4, 33}, 7, f.low, f.high, DType::f32);
    Tensor y32 = f.fn(x32);
    Tensor y64 = f.fn(x32.to(DType::f64));  // same inputs, exactly
    EXPECT_EQ(y32.dtype(), DType::f32);
    EXPECT_TRUE(test::all_close(y32, y64, 1e-6, 3e-6)) << f.name;
  }
}

TEST(UnaryForward, FastLog1pIsWithinAFewUlpOnTheUnitInterval) {
  // cpu::log1p_unit (log σ's f32 path) against the double log1p, over [0, 1] densely, tiny t (where
  // 1 + t rounds and Goldberg's correction matters) and the ends.
  std::vector<float> ts{0.0f, 1e-30f, 1e-12f, 1e-8f, 3e-8f, 1e-7f, 1e-4f, 0.5f, 0.70710678f, 1.0f};
  for (int i = 0; i <= 100000; ++i) ts.push_back(static_cast<float>(i) / 100000.0f);
  for (float t : ts) {
    const double want = std::log1p(static_cast<double>(t));
    const double got = cpu::log1p_unit(t);
    const double ulp = std::max(static_cast<double>(std::nextafter(static_cast<float>(want), 2.0f)) - want, 1e-45);
    EXPECT_LE(std::abs(got - want), 4 * ulp) << "t = " << t;
  }
}

TEST(UnaryForward, FastExpIsAccurateAndItsClampGivesTheLimits) {
  // cpu::fast_exp (softmax, cross-entropy, GELU, σ, the attention's f32 path) against the double
  // exp over the normal range, and the limits that come from its clamp alone: exactly 0 for
  // −inf and below −88, +inf above 88.73 and for +inf, NaN through.
  for (int i = -870000; i <= 880000; ++i) {
    const float x = static_cast<float>(i) / 10000.0f;
    const double want = std::exp(static_cast<double>(x)), got = cpu::fast_exp(x);
    ASSERT_LE(std::abs(got - want), 4e-7 * want) << "x = " << x;
  }
  constexpr float inf = std::numeric_limits<float>::infinity();
  for (float x : {-inf, -1e30f, -1000.0f, -88.5f, -88.0f}) EXPECT_EQ(cpu::fast_exp(x), 0.0f) << "x = " << x;
  for (float x : {88.73f, 100.0f, 1e30f, inf}) EXPECT_EQ(cpu::fast_exp(x), inf) << "x = " << x;
  EXPECT_TRUE(std::isnan(cpu::fast_exp(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(cpu::fast_exp(0.0f), 1.0f);
  EXPECT_EQ(cpu::fast_exp(-0.0f), 1.0f);
}

TEST(UnaryForward, FastTanhIsAccurateRelativelyAndSaturatesToOne) {
  // cpu::vtanh<float> (GELU's and tanh's f32 path) against the double tanh: relative error over
  // [−12, 12] (tiny inputs included, where tanh x ≈ x), exactly ±1 far out, NaN through.
  std::vector<float> xs{1e-30f, 1e-10f, 1e-5f, -1e-5f, 7.9f, 7.95f};
  for (int i = -1200000; i <= 1200000; ++i) xs.push_back(static_cast<float>(i) / 100000.0f);
  for (float x : xs) {
    const double want = std::tanh(static_cast<double>(x)), got = cpu::vtanh(x);
    ASSERT_LE(std::abs(got - want), 3e-7 * std::abs(want)) << "x = " << x;
  }
  for (float x : {9.0f, 50.0f, std::numeric_limits<float>::infinity()}) {
    EXPECT_EQ(cpu::vtanh(x), 1.0f);
    EXPECT_EQ(cpu::vtanh(-x), -1.0f);
  }
  EXPECT_TRUE(std::isnan(cpu::vtanh(std::numeric_limits<float>::quiet_NaN())));
}
TEST(UnaryForward, F32LogSigmoidKeepsItsTails) {
  // The vectorised f32 path: exact 0 and −x in the far tails, −inf at −inf, NaN kept.
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<double> y =
      ops::log_sigmoid(Tensor::from({-inf, -200, -30, 0, 30, 200, inf, nan}, {8}, DType::f32)).to_vector();
  EXPECT_EQ(y[0], -std::numeric_limits<double>::infinity());
  EXPECT_EQ(y[1], -200.0);
  EXPECT_NEAR(y[2], -30.0, 1e-5);
  EXPECT_NEAR(y[3], -std::log(2.0), 1e-7);
  EXPECT_NEAR(y[4] / -9.357622968839299e-14, 1.0, 1e-6);
  EXPECT_EQ(y[5], 0.0);
  EXPECT_EQ(y[6], 0.0);
  EXPECT_TRUE(std::isnan(y[7]));
}

TEST(UnaryForward, ThreadedPathMatchesScalarMath) {
  // Large enough to cross the parallel threshold of every function.
  Tensor x = test::rand({1 << 17}, 11, -4, 4);
  std::vector<double> xv = x.to_vector();
  std::vector<double> e = ops::exp(x).to_vector(), g = ops::gelu(x).to_vector(), r = ops::relu(x).to_vector();
  for (std::size_t i = 0; i < xv.size(); i += 997) {
    EXPECT_DOUBLE_EQ(e[i], std::exp(xv[i]));
    EXPECT_NEAR(g[i], 0.5 * xv[i] * (1 + std::tanh(0.7978845608028654 * (xv[i] + 0.044715 * xv[i] * xv[i] * xv[i]))),
                1e-15);
    EXPECT_EQ(r[i], xv[i] > 0 ? xv[i] : 0.0);
  }
}

TEST(UnaryGrad, EveryFunctionOnAwkwardShapes) {
  const std::vector<Shape> shapes = {{7}, {3, 1, 4}, {1, 5, 1}, {1}, {}};
  std::uint64_t seed = 100;
  for (const auto& f : all_fns()) {
    for (const Shape& s : shapes) {
      Tensor x = test::rand(s, seed++, f.low, f.high);
      if (std::string(f.name) == "relu" || std::string(f.name) == "heaviside") {
        // Keep inputs away from the kink (the step) at 0, where the derivative jumps.
        double* p = x.data<double>();
        for (std::int64_t i = 0; i < x.numel(); ++i)
          if (std::abs(p[i]) < 0.05) p[i] += 0.1;
      }
      EXPECT_TRUE(test::grads_ok([&](const std::vector<Tensor>& in) { return f.fn(in[0]); }, {x}))
          << f.name << " " << shape_str(s);
    }
  }
}

TEST(UnaryGrad, LargeMagnitudeInputs) {
  // Deep in the tails, where an unstable formula gives NaN or the wrong sign of a tiny gradient.
  Tensor x = Tensor::from({-30, -25, -18, -9, 9, 18, 25, 30}, {2, 4}, DType::f64);
  for (UnaryFn fn : {ops::sigmoid, ops::log_sigmoid, ops::tanh, ops::gelu})
    EXPECT_TRUE(test::grads_ok([&](const std::vector<Tensor>& in) { return fn(in[0]); }, {x}));
}

TEST(UnaryGrad, ChainedFunctionsShareSavedValues) {
  // x feeds several functions whose backwards save x or their outputs; the sum of paths must agree.
  Tensor x = test::rand({3, 4}, 21, 0.2, 2.0);
  auto f = [](const std::vector<Tensor>& in) {
    Tensor a = ops::tanh(in[0]) * ops::sigmoid(in[0]);
    Tensor b = ops::log(ops::exp(in[0]) + ops::sqrt(in[0]));
    return ops::gelu(a + b) + ops::square(ops::log_sigmoid(in[0]));
  };
  EXPECT_TRUE(test::grads_ok(f, {x}));
}

TEST(UnaryGrad, NoHistoryWithoutRequiresGrad) {
  Tensor x = test::rand({2, 2}, 3);
  EXPECT_EQ(ops::exp(x).grad_fn(), nullptr);
  x.set_requires_grad(true);
  Tensor y = ops::exp(x);
  ASSERT_NE(y.grad_fn(), nullptr);
  EXPECT_EQ(y.grad_fn()->name(), "exp");
}

TEST(UnaryErrors, NonFloatingDTypes) {
  Tensor i = Tensor::from_ints({1, 2, 3}, {3});
  Tensor h = Tensor::ones({3}, DType::bf16);
  for (const auto& f : all_fns()) {
    EXPECT_THROW(f.fn(i), DTypeError) << f.name;
    EXPECT_THROW(f.fn(h), DTypeError) << f.name;
  }
  try {
    ops::gelu(i);
    FAIL() << "expected DTypeError";
  } catch (const DTypeError& e) {
    EXPECT_NE(std::string(e.what()).find("gelu"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ops::exp(Tensor()), ValueError);
}

}  // namespace gattn
