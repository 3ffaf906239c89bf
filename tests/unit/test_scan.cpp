// cumsum: values on every axis (against a naive loop), both scan paths of the kernel (contiguous and
// strided lines, tiles wider than one column block, the threaded path), gradchecks, and the errors.
#include <gtest/gtest.h>

#include <vector>

#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/scan.h"
#include "test_util.h"

namespace gattn {
namespace {

// The naive prefix sum of x along axis: the oracle.
std::vector<double> naive_cumsum(const Tensor& x, std::int64_t axis) {
  const Shape& s = x.shape();
  std::int64_t outer = 1, inner = 1;
  for (std::int64_t d = 0; d < axis; ++d) outer *= s[static_cast<std::size_t>(d)];
  for (std::int64_t d = axis + 1; d < x.dim(); ++d) inner *= s[static_cast<std::size_t>(d)];
  const std::int64_t n = s[static_cast<std::size_t>(axis)];
  std::vector<double> v = x.to_vector(), out(v.size());
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t c = 0; c < inner; ++c) {
      double acc = 0;
      for (std::int64_t i = 0; i < n; ++i) {
        const auto at = static_cast<std::size_t>((o * n + i) * inner + c);
        acc += v[at];
        out[at] = acc;
      }
    }
  return out;
}

TEST(Scan, SmallVector) {
  Tensor x = Tensor::from({1, 2, 3, 4}, {4}, DType::f64);
  EXPECT_EQ(ops::cumsum(x, 0).to_vector(), (std::vector<double>{1, 3, 6, 10}));
  EXPECT_EQ(ops::cumsum(x, -1).to_vector(), (std::vector<double>{1, 3, 6, 10}));
  EXPECT_EQ(x.to_vector(), (std::vector<double>{1, 2, 3, 4}));  // input untouched
}

TEST(Scan, MatrixRowsAndColumns) {
  Tensor x = Tensor::from({1, 2, 3, 4, 5, 6}, {2, 3}, DType::f32);
  EXPECT_EQ(ops::cumsum(x, 1).to_vector(), (std::vector<double>{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(ops::cumsum(x, 0).to_vector(), (std::vector<double>{1, 2, 3, 5, 7, 9}));
  EXPECT_EQ(ops::cumsum(x, 1).dtype(), DType::f32);
}

TEST(Scan, EveryAxisMatchesNaive) {
  for (DType dt : {DType::f32, DType::f64}) {
    Tensor x = test::randn({3, 4, 5, 2}, 11, 1.0, dt);
    for (std::int64_t axis = 0; axis < 4; ++axis) {
      Tensor y = ops::cumsum(x, axis);
      EXPECT_EQ(y.shape(), x.shape());
      EXPECT_TRUE(test::all_close(y, Tensor::from(naive_cumsum(x, axis), x.shape(), DType::f64), 1e-5, 1e-5))
          << "axis " << axis << " " << dtype_name(dt);
      EXPECT_TRUE(test::all_close(ops::cumsum(x, axis - 4), y, 0, 0)) << "negative axis " << axis - 4;
    }
  }
}

TEST(Scan, LargeInputsUseEveryKernelPath) {
  // Long contiguous lines (threaded over lines), a strided axis wider than one column tile (256),
  // and few outer lines with many columns.
  for (const auto& [shape, axis] : std::vector<std::pair<Shape, std::int64_t>>{
           {{64, 1000}, 1}, {{300, 600}, 0}, {{2, 70, 513}, 1}, {{1, 4096}, 1}, {{4096, 1}, 0}}) {
    Tensor x = test::rand(shape, 12, -1, 1, DType::f64);
    EXPECT_TRUE(
        test::all_close(ops::cumsum(x, axis), Tensor::from(naive_cumsum(x, axis), shape, DType::f64), 1e-12, 1e-12))
        << shape_str(shape) << " axis " << axis;
  }
}

TEST(Scan, FloatAccumulatesInDouble) {
  // 2^20 ones then tiny values: a float running sum would lose the tiny additions entirely.
  const std::int64_t n = 1 << 20;
  std::vector<double> v(static_cast<std::size_t>(n) + 1000, 1e-3);
  v[0] = 1 << 20;
  Tensor x = Tensor::from(v, {static_cast<std::int64_t>(v.size())}, DType::f32);
  std::vector<double> y = ops::cumsum(x, 0).to_vector();
  EXPECT_NEAR(y.back(), (1 << 20) + (static_cast<double>(v.size()) - 1) * static_cast<double>(1e-3f), 0.2);
}

TEST(Scan, EmptyAndSizeOneAxes) {
  Tensor e = Tensor::zeros({3, 0, 2}, DType::f64);
  EXPECT_EQ(ops::cumsum(e, 1).shape(), (Shape{3, 0, 2}));
  EXPECT_EQ(ops::cumsum(e, 0).numel(), 0);
  Tensor x = test::randn({4, 1, 3}, 13);
  EXPECT_TRUE(test::all_close(ops::cumsum(x, 1), x, 0, 0));
}

TEST(Scan, BackwardIsReverseCumsum) {
  Tensor x = Tensor::from({1, 2, 3, 4}, {4}, DType::f64).set_requires_grad(true);
  Tensor g = Tensor::from({1, 10, 100, 1000}, {4}, DType::f64);
  ops::cumsum(x, 0).backward(g);
  EXPECT_EQ(x.grad().to_vector(), (std::vector<double>{1111, 1110, 1100, 1000}));
}

TEST(Scan, Gradcheck) {
  auto along = [](std::int64_t axis) {
    return [axis](const std::vector<Tensor>& in) { return ops::cumsum(in[0], axis); };
  };
  EXPECT_TRUE(test::grads_ok(along(0), {test::randn({5}, 14)}));
  EXPECT_TRUE(test::grads_ok(along(1), {test::randn({3, 4}, 15)}));
  EXPECT_TRUE(test::grads_ok(along(0), {test::randn({3, 4}, 16)}));
  EXPECT_TRUE(test::grads_ok(along(-1), {test::randn({2, 3, 4}, 17)}));
  EXPECT_TRUE(test::grads_ok(along(1), {test::randn({2, 3, 4}, 18)}));
  EXPECT_TRUE(test::grads_ok(along(2), {test::randn({2, 2, 3, 2}, 19)}));
}

TEST(Scan, GradcheckThroughAChain) {
  // Two scans on different axes around a product: the reverse scans must compose with mul's backward.
  auto f = [](const std::vector<Tensor>& in) {
    Tensor x = in[0];
    Tensor y = ops::cumsum(x, 1);
    return ops::cumsum(y * y, 0);
  };
  EXPECT_TRUE(test::grads_ok(f, {test::randn({3, 4}, 20)}));
}

TEST(Scan, BadAxisIsValueError) {
  Tensor x = Tensor::zeros({2, 3}, DType::f64);
  EXPECT_THROW(ops::cumsum(x, 2), ValueError);
  EXPECT_THROW(ops::cumsum(x, -3), ValueError);
  EXPECT_THROW(ops::cumsum(Tensor::scalar(1.0, DType::f64), 0), ValueError);
  try {
    ops::cumsum(x, 5);
    FAIL() << "no throw";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("cumsum"), std::string::npos) << e.what();
  }
}

TEST(Scan, NonFloatIsDTypeError) {
  EXPECT_THROW(ops::cumsum(Tensor::from_ints({1, 2}, {2}), 0), DTypeError);
  EXPECT_THROW(ops::cumsum(Tensor(), 0), ValueError);
}

}  // namespace
}  // namespace gattn
