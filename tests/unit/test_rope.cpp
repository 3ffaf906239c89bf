// rope: values against a naive loop of the documented formula, the rotate-half layout on a hand-worked
// case, the relative-position property, the inverse, large and negative positions, gradchecks, errors.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/rope.h"
#include "test_util.h"

namespace gattn {
namespace {

// The documented formula, element by element: the oracle.
std::vector<double> naive_rope(const Tensor& x, const std::vector<std::int32_t>& pos, double base = 10000.0) {
  const std::int64_t T = x.size(-2), d = x.size(-1), h = d / 2, outer = x.numel() / (T * d);
  std::vector<double> v = x.to_vector(), out(v.size());
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int64_t k = 0; k < h; ++k) {
        const double a = pos[static_cast<std::size_t>(t)] * std::pow(base, -2.0 * k / d);
        const auto i0 = static_cast<std::size_t>((o * T + t) * d + k), i1 = i0 + static_cast<std::size_t>(h);
        out[i0] = v[i0] * std::cos(a) - v[i1] * std::sin(a);
        out[i1] = v[i1] * std::cos(a) + v[i0] * std::sin(a);
      }
  return out;
}

Tensor positions_of(const std::vector<std::int32_t>& p) {
  return Tensor::from_ints(p, {static_cast<std::int64_t>(p.size())});
}

TEST(Rope, RotatesTheHalvesByPositionTimesFrequency) {
  // d = 4: pairs (x0, x2) at frequency 1 and (x1, x3) at 10000^(−1/2) = 0.01.
  Tensor x = Tensor::from({1, 2, 3, 4}, {1, 4}, DType::f64);
  std::vector<double> y = ops::rope(x, positions_of({5})).to_vector();
  const double a0 = 5.0, a1 = 0.05;
  EXPECT_NEAR(y[0], 1 * std::cos(a0) - 3 * std::sin(a0), 1e-15);
  EXPECT_NEAR(y[2], 3 * std::cos(a0) + 1 * std::sin(a0), 1e-15);
  EXPECT_NEAR(y[1], 2 * std::cos(a1) - 4 * std::sin(a1), 1e-15);
  EXPECT_NEAR(y[3], 4 * std::cos(a1) + 2 * std::sin(a1), 1e-15);
  // Position 0 is the identity.
  EXPECT_TRUE(test::all_close(ops::rope(x, positions_of({0})), x, 0, 0));
}

TEST(Rope, MatchesTheFormulaOnEveryShapeAndDType) {
  for (DType dt : {DType::f32, DType::f64})
    for (const Shape& shape : std::vector<Shape>{{3, 2}, {2, 3, 5, 8}, {1, 1, 7, 64}, {2, 4, 300, 16}}) {
      Tensor x = test::randn(shape, 31, 1.0, dt);
      std::vector<std::int32_t> pos(static_cast<std::size_t>(shape[shape.size() - 2]));
      for (std::size_t t = 0; t < pos.size(); ++t) pos[t] = static_cast<std::int32_t>(3 * t) - 4;
      Tensor y = ops::rope(x, positions_of(pos));
      EXPECT_EQ(y.dtype(), dt);
      const double tol = dt == DType::f64 ? 1e-13 : 1e-6;
      EXPECT_TRUE(test::all_close(y, Tensor::from(naive_rope(x, pos), shape, DType::f64), tol, tol))
          << shape_str(shape) << " " << dtype_name(dt);
    }
}

TEST(Rope, ScoresDependOnRelativePositionOnly) {
  // q at p and k at p' give the same q·k as q at p+s and k at p'+s, also far past any block size.
  Tensor q = test::randn({1, 16}, 32), k = test::randn({1, 16}, 33);
  auto score = [&](std::int32_t pq, std::int32_t pk) {
    return ops::sum(ops::rope(q, positions_of({pq})) * ops::rope(k, positions_of({pk}))).item();
  };
  const double s0 = score(7, 3);
  EXPECT_NEAR(score(107, 103), s0, 1e-12);
  EXPECT_NEAR(score(1000007, 1000003), s0, 1e-9);
  EXPECT_NEAR(score(3, -1), s0, 1e-12);
}

TEST(Rope, NegativePositionsUndoTheRotation) {
  Tensor x = test::randn({2, 6, 10}, 34);
  std::vector<std::int32_t> p{0, 1, 5, 77, 4096, 2000000}, minus_p;
  for (std::int32_t v : p) minus_p.push_back(-v);
  Tensor back = ops::rope(ops::rope(x, positions_of(p)), positions_of(minus_p));
  EXPECT_TRUE(test::all_close(back, x, 1e-12, 0));
}

TEST(Rope, FloatKeepsLargePositionsAccurate) {
  // Angles are computed in double: at position 10⁶ an f32 input still rotates to within f32 rounding
  // of the f64 result.
  Tensor x = test::randn({3, 32}, 35);
  Tensor pos = positions_of({1000000, 1234567, 2000000000});
  EXPECT_TRUE(test::all_close(ops::rope(x.to(DType::f32), pos), ops::rope(x, pos), 2e-6, 2e-6));
}

TEST(Rope, BackwardRotatesByTheNegativeAngle) {
  Tensor x = test::randn({2, 3, 4}, 36).set_requires_grad(true);
  Tensor pos = positions_of({2, 9, 40});
  Tensor g = test::randn({2, 3, 4}, 37);
  ops::rope(x, pos).backward(g);
  Tensor expected = ops::rope(g, positions_of({-2, -9, -40}));
  EXPECT_TRUE(test::all_close(x.grad(), expected, 1e-14, 0));
}

TEST(Rope, Gradcheck) {
  auto at = [](std::vector<std::int32_t> p) {
    return [p](const std::vector<Tensor>& in) { return ops::rope(in[0], positions_of(p)); };
  };
  EXPECT_TRUE(test::grads_ok(at({3}), {test::randn({1, 2}, 38)}));
  EXPECT_TRUE(test::grads_ok(at({0, 1, 2, 3}), {test::randn({2, 3, 4, 6}, 39)}));
  EXPECT_TRUE(test::grads_ok(at({100000, -7, 12}), {test::randn({2, 3, 8}, 40)}));
  // Through a product of two rotated tensors, as attention scores use them.
  auto scores = [](const std::vector<Tensor>& in) {
    Tensor pos = positions_of({4, 5, 6});
    return ops::sum(ops::rope(in[0], pos) * ops::rope(in[1], pos), {-1});
  };
  EXPECT_TRUE(test::grads_ok(scores, {test::randn({2, 3, 4}, 41), test::randn({2, 3, 4}, 42)}));
}

TEST(Rope, FractionOneGivesTheSameBits) {
  for (DType dt : {DType::f32, DType::f64}) {
    Tensor x = test::randn({2, 3, 5, 8}, 43, 1.0, dt);
    Tensor pos = positions_of({0, 3, -7, 1000, 123456});
    Tensor y = ops::rope(x, pos), y1 = ops::rope(x, pos, ops::kRopeBase, 1.0);
    EXPECT_EQ(y.to_vector(), y1.to_vector()) << dtype_name(dt);
  }
}

TEST(Rope, QuarterFractionRotatesTheFirstQuarterOnly) {
  // d = 8, fraction 0.25: rd = 2, one pair (x0, x1) at θ_0 = 1; x2 … x7 pass through.
  Tensor x = Tensor::from({1, 2, 3, 4, 5, 6, 7, 8}, {1, 8}, DType::f64);
  std::vector<double> y = ops::rope(x, positions_of({3}), ops::kRopeBase, 0.25).to_vector();
  EXPECT_NEAR(y[0], 1 * std::cos(3.0) - 2 * std::sin(3.0), 1e-15);
  EXPECT_NEAR(y[1], 2 * std::cos(3.0) + 1 * std::sin(3.0), 1e-15);
  for (std::size_t j = 2; j < 8; ++j) EXPECT_EQ(y[j], static_cast<double>(j + 1));
  // d = 16, fraction 0.25: rd = 4, pairs (x0, x2) at θ = 1 and (x1, x3) at base^(−2/4) = 0.01 (base
  // 10⁴), i.e. the frequencies of a 4-wide head, not of a 16-wide one.
  Tensor x16 = test::randn({1, 16}, 44);
  std::vector<double> v = x16.to_vector(), z = ops::rope(x16, positions_of({5}), ops::kRopeBase, 0.25).to_vector();
  const double a0 = 5.0, a1 = 0.05;
  EXPECT_NEAR(z[0], v[0] * std::cos(a0) - v[2] * std::sin(a0), 1e-15);
  EXPECT_NEAR(z[2], v[2] * std::cos(a0) + v[0] * std::sin(a0), 1e-15);
  EXPECT_NEAR(z[1], v[1] * std::cos(a1) - v[3] * std::sin(a1), 1e-15);
  EXPECT_NEAR(z[3], v[3] * std::cos(a1) + v[1] * std::sin(a1), 1e-15);
  for (std::size_t j = 4; j < 16; ++j) EXPECT_EQ(z[j], v[j]);
}

TEST(Rope, PartialMatchesFullRopeOfTheRotatedSlice) {
  // rope(x, fraction) = [rope(x[..., :rd]), x[..., rd:]] with the other base too, in both dtypes.
  for (DType dt : {DType::f32, DType::f64}) {
    const std::int64_t d = 12, rd = 6;  // fraction 0.5
    Tensor x = test::randn({2, 3, 4, d}, 45, 1.0, dt);
    std::vector<std::int32_t> p{0, 9, -4, 70000};
    std::vector<double> v = x.to_vector(), got = ops::rope(x, positions_of(p), 500.0, 0.5).to_vector();
    std::vector<double> head;
    for (std::size_t r = 0; r < v.size() / d; ++r)
      for (std::int64_t j = 0; j < rd; ++j) head.push_back(v[r * d + static_cast<std::size_t>(j)]);
    std::vector<double> rot = naive_rope(Tensor::from(head, {2, 3, 4, rd}, DType::f64), p, 500.0);
    const double tol = dt == DType::f64 ? 1e-13 : 1e-6;
    for (std::size_t r = 0; r < v.size() / d; ++r)
      for (std::int64_t j = 0; j < d; ++j) {
        const std::size_t i = r * d + static_cast<std::size_t>(j);
        if (j < rd)
          EXPECT_NEAR(got[i], rot[r * rd + static_cast<std::size_t>(j)], tol) << i;
        else
          EXPECT_EQ(got[i], v[i]) << i;
      }
  }
}

TEST(Rope, PartialFractionTruncatesAsHuggingFace) {
  // ⌊0.3 · 20⌋ = 6 rotated elements (the rest pass through); an odd d is fine when rd is even.
  Tensor x = test::randn({2, 20}, 46);
  std::vector<double> v = x.to_vector(), y = ops::rope(x, positions_of({1, 2}), ops::kRopeBase, 0.3).to_vector();
  for (std::size_t r = 0; r < 2; ++r)
    for (std::size_t j = 6; j < 20; ++j) EXPECT_EQ(y[r * 20 + j], v[r * 20 + j]);
  EXPECT_NE(y[0], v[0]);
  Tensor odd = test::randn({2, 9}, 47);
  EXPECT_EQ(ops::rope(odd, positions_of({1, 2}), ops::kRopeBase, 0.5).to_vector()[8], odd.to_vector()[8]);
}

TEST(Rope, PartialGradcheckAndInverse) {
  for (double fraction : {0.25, 0.5, 0.75}) {
    auto f = [fraction](const std::vector<Tensor>& in) {
      return ops::rope(in[0], positions_of({2, -5, 30000}), ops::kRopeBase, fraction);
    };
    EXPECT_TRUE(test::grads_ok(f, {test::randn({2, 3, 8}, 48)})) << fraction;
    EXPECT_TRUE(test::grads_ok(f, {test::randn({1, 1, 3, 8}, 49)})) << fraction;
  }
  EXPECT_TRUE(
      test::grads_ok([](const std::vector<Tensor>& in) { return ops::rope(in[0], positions_of({7}), 100.0, 0.5); },
                     {test::randn({1, 1, 1, 4}, 50)}));
  Tensor x = test::randn({2, 4, 12}, 51);
  Tensor back =
      ops::rope(ops::rope(x, positions_of({1, 2, 3, 4}), 50.0, 0.5), positions_of({-1, -2, -3, -4}), 50.0, 0.5);
  EXPECT_TRUE(test::all_close(back, x, 1e-12, 0));
}

TEST(Rope, BadFractionsAreValueErrorsNamingTheOp) {
  Tensor x = Tensor::zeros({2, 3, 8}, DType::f64);
  Tensor p = positions_of({0, 1, 2});
  for (double fraction : {0.0, -0.5, 1.5, std::nan("")}) {
    const std::string msg = test::error_of([&] { ops::rope(x, p, ops::kRopeBase, fraction); });
    EXPECT_NE(msg.find("rope: fraction must be in (0, 1]"), std::string::npos) << msg;
    EXPECT_THROW(ops::rope(x, p, ops::kRopeBase, fraction), ValueError);
  }
  // 0.1 · 8 rotates 0 elements, 0.375 · 8 three: neither is a rotation of pairs.
  EXPECT_THROW(ops::rope(x, p, ops::kRopeBase, 0.1), ValueError);
  const std::string msg = test::error_of([&] { ops::rope(x, p, ops::kRopeBase, 0.375); });
  EXPECT_NE(msg.find("rope: fraction 0.375 of d = 8 rotates 3 elements"), std::string::npos) << msg;
  EXPECT_THROW(ops::rope(x, p, ops::kRopeBase, 0.375), ValueError);
}

TEST(Rope, ConsecutivePositions) {
  EXPECT_EQ(ops::position_ids(5, 3).to_vector(), (std::vector<double>{5, 6, 7}));
  EXPECT_EQ(ops::position_ids(0, 0).numel(), 0);
  EXPECT_THROW(ops::position_ids(std::int64_t{1} << 31, 1), ValueError);
}

TEST(Rope, BadArgumentsAreTypedErrors) {
  Tensor x = Tensor::zeros({2, 3, 4}, DType::f64);
  EXPECT_THROW(ops::rope(Tensor::zeros({2, 3, 5}, DType::f64), positions_of({0, 1, 2})), ShapeError);
  EXPECT_THROW(ops::rope(x, positions_of({0, 1})), ShapeError);
  EXPECT_THROW(ops::rope(Tensor::zeros({4}, DType::f64), positions_of({0})), ShapeError);
  EXPECT_THROW(ops::rope(x, Tensor::zeros({3}, DType::f64)), DTypeError);
  EXPECT_THROW(ops::rope(Tensor::from_ints({1, 2}, {1, 2}), positions_of({0})), DTypeError);
  EXPECT_THROW(ops::rope(Tensor(), positions_of({0})), ValueError);
  EXPECT_THROW(ops::rope(x, positions_of({0, 1, 2}), 0.0), ValueError);
  EXPECT_NE(test::error_of([&] { ops::rope(x, positions_of({0})); }).find("rope"), std::string::npos);
}

}  // namespace
}  // namespace gattn
