// Reductions (ops/reduce.h): sum/mean over all elements and over axis sets (negative, keepdim,
// size-1 and empty dims, non-adjacent axes) against a naive reference, the threaded and chunked
// paths, f32 accuracy, gradchecks, amax_last, and argument errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "framework/runtime/threads.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/unary.h"
#include "test_util.h"

namespace gattn {

namespace {

// Naive reference in double: every input element is added to its output slot.
Tensor ref_reduce(const Tensor& x, const std::vector<std::int64_t>& axes, bool keepdim, bool mean) {
  const std::size_t rank = x.shape().size();
  std::vector<bool> red(rank, false);
  for (auto a : axes) red[static_cast<std::size_t>(a < 0 ? a + static_cast<std::int64_t>(rank) : a)] = true;
  Shape keep, out_shape;
  std::int64_t count = 1;
  for (std::size_t d = 0; d < rank; ++d) {
    keep.push_back(red[d] ? 1 : x.shape()[d]);
    if (red[d]) count *= x.shape()[d];
    if (!red[d] || keepdim) out_shape.push_back(keep.back());
  }
  std::vector<double> out(static_cast<std::size_t>(shape_numel(keep)), 0.0);
  std::vector<double> xv = x.to_vector();
  for (std::int64_t k = 0; k < x.numel(); ++k) {
    std::int64_t rem = k, o = 0, stride = 1;
    for (std::size_t d = rank; d-- > 0;) {
      const std::int64_t idx = rem % x.shape()[d];
      rem /= x.shape()[d];
      if (!red[d]) o += idx * stride;
      stride *= keep[d];
    }
    out[static_cast<std::size_t>(o)] += xv[static_cast<std::size_t>(k)];
  }
  if (mean)
    for (double& v : out) v /= static_cast<double>(count);
  return Tensor::from(out, out_shape, DType::f64);
}

std::string axes_str(const std::vector<std::int64_t>& axes) {
  std::string s = "{";
  for (auto a : axes) s += std::to_string(a) + ",";
  return s + "}";
}

}  // namespace

TEST(ReduceForward, AllElements) {
  Tensor x = Tensor::from({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor s = ops::sum(x);
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.dtype(), DType::f32);
  EXPECT_EQ(s.item(), 21.0);
  EXPECT_EQ(ops::mean(x).item(), 3.5);
  // A scalar reduces to itself.
  EXPECT_EQ(ops::sum(Tensor::scalar(2.5)).item(), 2.5);
  EXPECT_EQ(ops::mean(Tensor::scalar(2.5)).dim(), 0);
}

TEST(ReduceForward, AxisSetsMatchReference) {
  Tensor x = test::rand({2, 3, 4, 5}, 1);
  const std::vector<std::vector<std::int64_t>> sets = {
      {0},    {1},    {2},    {3},      {-1},      {-4},      {0, 1},    {2, 3},       {1, 2},      {0, 2},
      {1, 3}, {0, 3}, {3, 1}, {-1, -3}, {0, 1, 2}, {0, 2, 3}, {0, 1, 3}, {0, 1, 2, 3}, {3, 2, 1, 0}};
  for (const auto& axes : sets) {
    for (bool keepdim : {false, true}) {
      EXPECT_TRUE(test::all_close(ops::sum(x, axes, keepdim), ref_reduce(x, axes, keepdim, false), 1e-12, 1e-12))
          << "sum " << axes_str(axes) << " keepdim " << keepdim;
      EXPECT_TRUE(test::all_close(ops::mean(x, axes, keepdim), ref_reduce(x, axes, keepdim, true), 1e-12, 1e-12))
          << "mean " << axes_str(axes) << " keepdim " << keepdim;
    }
  }
  EXPECT_EQ(ops::sum(x, {1, 3}, true).shape(), (Shape{2, 1, 4, 1}));
  EXPECT_EQ(ops::sum(x, {1, 3}).shape(), (Shape{2, 4}));
  EXPECT_EQ(ops::mean(x, {0, 1, 2, 3}).shape(), Shape{});
}

TEST(ReduceForward, SizeOneDimsAndEmptyAxisList) {
  Tensor x = test::rand({3, 1, 4, 1}, 2);
  for (const auto& axes : std::vector<std::vector<std::int64_t>>{{1}, {3}, {1, 3}, {0, 1}, {1, 2}, {0, 3}, {-3, -1, 0}})
    for (bool keepdim : {false, true})
      EXPECT_TRUE(test::all_close(ops::sum(x, axes, keepdim), ref_reduce(x, axes, keepdim, false), 1e-12, 1e-12))
          << axes_str(axes) << " keepdim " << keepdim;
  // No axes: an identity copy (not a view of x).
  Tensor id = ops::sum(x, {});
  EXPECT_EQ(id.shape(), x.shape());
  EXPECT_EQ(id.to_vector(), x.to_vector());
  EXPECT_FALSE(id.shares_storage_with(x));
  EXPECT_EQ(ops::mean(x, {}, true).to_vector(), x.to_vector());
  // Reducing only size-1 dims is a copy too.
  EXPECT_EQ(ops::mean(x, {1, 3}).to_vector(), x.to_vector());
  EXPECT_EQ(ops::mean(x, {1, 3}).shape(), (Shape{3, 4}));
}

TEST(ReduceForward, EmptyTensors) {
  Tensor e = Tensor::zeros({0, 3}, DType::f64);
  EXPECT_EQ(ops::sum(e).item(), 0.0);
  EXPECT_TRUE(std::isnan(ops::mean(e).item()));  // 0/0, as numpy
  Tensor s0 = ops::sum(e, {0});
  EXPECT_EQ(s0.shape(), Shape{3});
  EXPECT_EQ(s0.to_vector(), (std::vector<double>{0, 0, 0}));
  for (double v : ops::mean(e, {0}, true).to_vector()) EXPECT_TRUE(std::isnan(v));
  EXPECT_EQ(ops::mean(e, {0}, true).shape(), (Shape{1, 3}));
  EXPECT_EQ(ops::sum(e, {1}).shape(), Shape{0});
  // Gradients of empty reductions are empty, not errors.
  Tensor x = Tensor::zeros({0, 3}, DType::f64).set_requires_grad(true);
  ops::sum(ops::mean(x, {0})).backward();
  EXPECT_EQ(x.grad().shape(), (Shape{0, 3}));
}

TEST(ReduceForward, LargeInputsUseEveryKernelPath) {
  // One long row (the chunked path), many short rows, and column sums (the tiled path).
  Tensor big = test::rand({1 << 17}, 3);
  EXPECT_TRUE(test::all_close(ops::sum(big), ref_reduce(big, {0}, false, false), 1e-9, 1e-12));
  Tensor rows = test::rand({4, 40000}, 4);
  EXPECT_TRUE(test::all_close(ops::sum(rows, {1}), ref_reduce(rows, {1}, false, false), 1e-9, 1e-12));
  Tensor m = test::rand({300, 700}, 5);
  for (const auto& axes : std::vector<std::vector<std::int64_t>>{{0}, {1}, {0, 1}})
    EXPECT_TRUE(test::all_close(ops::mean(m, axes), ref_reduce(m, axes, false, true), 1e-12, 1e-12)) << axes_str(axes);
  Tensor t = test::rand({30, 20, 50}, 6);
  EXPECT_TRUE(test::all_close(ops::sum(t, {0, 2}), ref_reduce(t, {0, 2}, false, false), 1e-10, 1e-12));
}

TEST(ReduceForward, ThreadCountDoesNotChangeResults) {
  // Partitions depend on the shape only, so sums are bit-identical for any number of threads.
  Tensor long_row = test::rand({3, 70000}, 14, -1, 1, DType::f32);
  Tensor cols = test::rand({500, 300}, 15, -1, 1, DType::f32);
  auto run = [&] {
    std::vector<double> v = ops::sum(long_row, {1}).to_vector();
    for (double c : ops::sum(cols, {0}).to_vector()) v.push_back(c);
    for (double c : ops::mean(cols, {1}).to_vector()) v.push_back(c);
    v.push_back(ops::sum(cols).item());
    return v;
  };
  const int saved = num_threads();
  set_num_threads(1);
  std::vector<double> one = run();
  set_num_threads(3);
  std::vector<double> three = run();
  set_num_threads(saved);
  EXPECT_EQ(one, three);
}

TEST(ReduceForward, F32AccumulatesAccurately) {
  // 2^18 copies of 0.1f: a float accumulator would drift by ~1e-3 relative; a double one does not.
  const std::int64_t n = 1 << 18;
  Tensor x = Tensor::full({n}, 0.1, DType::f32);
  const double exact = static_cast<double>(0.1f) * n;
  EXPECT_NEAR(ops::sum(x).item(), exact, exact * 1e-7);
  EXPECT_NEAR(ops::mean(x.alias({512, 512}), {0}).at(7), static_cast<double>(0.1f), 1e-8);
}

TEST(ReduceForward, F32MatchesF64) {
  Tensor x32 = test::rand({5, 6, 7}, 8, -1, 1, DType::f32);
  Tensor x64 = x32.to(DType::f64);
  for (const auto& axes : std::vector<std::vector<std::int64_t>>{{0}, {1}, {2}, {0, 2}, {0, 1, 2}}) {
    Tensor s = ops::sum(x32, axes, true);
    EXPECT_EQ(s.dtype(), DType::f32);
    EXPECT_TRUE(test::all_close(s, ops::sum(x64, axes, true), 1e-6, 1e-6)) << axes_str(axes);
    EXPECT_TRUE(test::all_close(ops::mean(x32, axes), ops::mean(x64, axes), 1e-7, 1e-6)) << axes_str(axes);
  }
}

TEST(ReduceGrad, MeanGradientIsUniform) {
  Tensor x = test::rand({2, 3}, 9).set_requires_grad(true);
  ops::mean(x).backward();
  for (double v : x.grad().to_vector()) EXPECT_DOUBLE_EQ(v, 1.0 / 6);
  x.zero_grad();
  ops::sum(ops::sum(x, {-1}) * Tensor::from({1, 2}, {2}, DType::f64)).backward();
  EXPECT_EQ(x.grad().to_vector(), (std::vector<double>{1, 1, 1, 2, 2, 2}));
}

TEST(ReduceGrad, Gradchecks) {
  struct Case {
    Shape shape;
    std::vector<std::int64_t> axes;
    bool keepdim;
  };
  const std::vector<Case> cases = {
      {{4}, {0}, false},      {{3, 4}, {1}, true},           {{3, 4}, {-2}, false},        {{2, 3, 4}, {0, 2}, false},
      {{2, 3, 4}, {1}, true}, {{2, 1, 3, 1}, {1, 3}, false}, {{2, 1, 3, 1}, {0, 1}, true}, {{2, 3, 4}, {}, false},
      {{1, 1}, {0, 1}, true}, {{2, 3, 4, 2}, {-1, 1}, true}, {{2, 3, 4}, {2, 1, 0}, false}};
  std::uint64_t seed = 50;
  for (const Case& c : cases) {
    Tensor x = test::rand(c.shape, seed++);
    EXPECT_TRUE(test::grads_ok([&](const std::vector<Tensor>& in) { return ops::sum(in[0], c.axes, c.keepdim); }, {x}))
        << "sum " << shape_str(c.shape) << " " << axes_str(c.axes);
    EXPECT_TRUE(test::grads_ok([&](const std::vector<Tensor>& in) { return ops::mean(in[0], c.axes, c.keepdim); }, {x}))
        << "mean " << shape_str(c.shape) << " " << axes_str(c.axes);
  }
  Tensor x = test::rand({3, 1, 5}, 70);
  EXPECT_TRUE(test::grads_ok([](const std::vector<Tensor>& in) { return ops::sum(in[0]); }, {x}));
  EXPECT_TRUE(test::grads_ok([](const std::vector<Tensor>& in) { return ops::mean(in[0]); }, {x}));
  // Composed: a variance-like expression, reductions feeding broadcasting arithmetic.
  EXPECT_TRUE(test::grads_ok(
      [](const std::vector<Tensor>& in) {
        Tensor mu = ops::mean(in[0], {-1}, true);
        return ops::mean(ops::square(in[0] - mu), {-1});
      },
      {x}));
}

TEST(ReduceAmaxLast, ValuesShapesAndNoHistory) {
  Tensor x = Tensor::from({1, 5, -2, -7, -3, -9}, {2, 3}, DType::f64).set_requires_grad(true);
  Tensor m = ops::amax_last(x);
  EXPECT_EQ(m.shape(), Shape{2});
  EXPECT_EQ(m.to_vector(), (std::vector<double>{5, -3}));
  EXPECT_EQ(m.grad_fn(), nullptr);
  EXPECT_FALSE(m.requires_grad());
  EXPECT_EQ(ops::amax_last(Tensor::from({4}, {1})).item(), 4.0);
  EXPECT_EQ(ops::amax_last(Tensor::zeros({0, 3})).shape(), Shape{0});
  // NaN is never hidden by the max.
  Tensor n = Tensor::from({1, std::nan(""), 3, std::nan(""), 0, 1}, {2, 3}, DType::f32);
  for (double v : ops::amax_last(n).to_vector()) EXPECT_TRUE(std::isnan(v));
  // Large input: the threaded path against a scalar loop.
  Tensor big = test::randn({257, 300}, 12);
  std::vector<double> bv = big.to_vector(), mv = ops::amax_last(big).to_vector();
  for (std::size_t r = 0; r < 257; ++r) {
    double best = bv[r * 300];
    for (std::size_t c = 1; c < 300; ++c) best = std::max(best, bv[r * 300 + c]);
    EXPECT_EQ(mv[r], best);
  }
}

TEST(ReduceErrors, DTypesAndAxes) {
  Tensor i = Tensor::from_ints({1, 2, 3, 4}, {2, 2});
  EXPECT_THROW(ops::sum(i), DTypeError);
  EXPECT_THROW(ops::sum(i, {0}), DTypeError);
  EXPECT_THROW(ops::mean(i), DTypeError);
  EXPECT_THROW(ops::mean(i, {1}, true), DTypeError);
  EXPECT_THROW(ops::amax_last(i), DTypeError);
  Tensor x = test::rand({2, 3}, 13);
  EXPECT_THROW(ops::sum(x, {2}), ValueError);
  EXPECT_THROW(ops::sum(x, {-3}), ValueError);
  EXPECT_THROW(ops::mean(x, {0, 0}), ValueError);
  EXPECT_THROW(ops::mean(x, {1, -1}), ValueError);
  EXPECT_THROW(ops::sum(Tensor::scalar(1.0), {0}), ValueError);
  EXPECT_THROW(ops::amax_last(Tensor::scalar(1.0)), ValueError);
  EXPECT_THROW(ops::amax_last(Tensor::zeros({2, 0})), ValueError);
  try {
    ops::mean(x, {1, -1});
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("mean"), std::string::npos) << msg;
    EXPECT_NE(msg.find("-1"), std::string::npos) << msg;
  }
  try {
    ops::sum(x, {5});
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("sum"), std::string::npos) << msg;
    EXPECT_NE(msg.find("5"), std::string::npos) << msg;
  }
}

}  // namespace gattn
