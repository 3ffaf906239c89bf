// Shape ops: forward values, storage sharing of the views, gradchecks, round trips and typed errors.
#include <gtest/gtest.h>

#include "ops/elementwise.h"
#include "ops/shape.h"
#include "ops/unary.h"
#include "test_util.h"

namespace gattn {

namespace {

// Naive permute in double: out[idx] = x[idx permuted back].
Tensor ref_permute(const Tensor& x, const std::vector<std::int64_t>& dims) {
  const Shape& s = x.shape();
  const std::size_t n = s.size();
  Shape os(n);
  for (std::size_t k = 0; k < n; ++k) os[k] = s[dims[k]];
  std::vector<std::int64_t> in_strides(n, 1);
  for (std::size_t d = n - 1; d-- > 0;) in_strides[d] = in_strides[d + 1] * s[d + 1];
  std::vector<double> vx = x.to_vector(), vo(vx.size());
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(vo.size()); ++i) {
    std::int64_t rem = i, src = 0;
    for (std::size_t k = n; k-- > 0;) {
      src += (rem % os[k]) * in_strides[dims[k]];
      rem /= os[k];
    }
    vo[i] = vx[src];
  }
  return Tensor::from(vo, os, x.dtype());
}

using test::error_of;

bool has(const std::string& msg, const std::string& part) { return msg.find(part) != std::string::npos; }

}  // namespace

TEST(ShapeReshape, InfersMinusOneAndSharesStorage) {
  Tensor x = Tensor::from({0, 1, 2, 3, 4, 5}, {2, 3});
  Tensor y = ops::reshape(x, {3, -1});
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  EXPECT_TRUE(y.shares_storage_with(x));
  EXPECT_EQ(y.to_vector(), x.to_vector());
  EXPECT_EQ(ops::reshape(x, {-1}).shape(), (Shape{6}));
  EXPECT_EQ(ops::reshape(x, {1, -1, 1}).shape(), (Shape{1, 6, 1}));
  EXPECT_EQ(ops::reshape(Tensor::zeros({0, 4}), {-1, 2}).shape(), (Shape{0, 2}));
  EXPECT_EQ(ops::reshape(Tensor::scalar(2.0), {1, 1}).shape(), (Shape{1, 1}));
}

TEST(ShapeReshape, Gradcheck) {
  EXPECT_TRUE(test::grads_ok(
      [](const std::vector<Tensor>& v) {
        return ops::reshape(v[0], {4, -1});
      },
      {test::randn({2, 3, 4}, 1)}));
}

TEST(ShapeReshape, Errors) {
  Tensor x = Tensor::zeros({2, 3});
  std::string msg = error_of([&] { ops::reshape(x, {4, -1}); });
  EXPECT_TRUE(has(msg, "reshape") && has(msg, "[2, 3]") && has(msg, "[4, -1]")) << msg;
  EXPECT_THROW(ops::reshape(x, {4, -1}), ShapeError);
  EXPECT_THROW(ops::reshape(x, {4, 2}), ShapeError);
  EXPECT_THROW(ops::reshape(x, {-1, -1}), ValueError);
  EXPECT_THROW(ops::reshape(x, {-2, -3}), ValueError);
  EXPECT_THROW(ops::reshape(Tensor::zeros({0, 3}), {0, -1}), ShapeError);  // ambiguous
}

TEST(ShapeTranspose, ValuesAndGradcheck) {
  Tensor x = Tensor::from({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor t = ops::transpose(x, 0, 1);
  EXPECT_EQ(t.shape(), (Shape{3, 2}));
  EXPECT_EQ(t.to_vector(), (std::vector<double>{1, 4, 2, 5, 3, 6}));
  EXPECT_FALSE(t.shares_storage_with(x));
  EXPECT_EQ(ops::transpose(x, -1, -2).to_vector(), t.to_vector());
  EXPECT_EQ(ops::transpose(x, 1, 1).to_vector(), x.to_vector());
  // Every pair of axes of a 4-D tensor, with short and long inner runs.
  for (const Shape& s : {Shape{2, 3, 4, 5}, Shape{3, 2, 5, 40}, Shape{37, 3, 1, 33}})
    for (std::int64_t i = 0; i < 4; ++i)
      for (std::int64_t j = 0; j < 4; ++j) {
        Tensor a = test::rand(s, 2);
        std::vector<std::int64_t> p{0, 1, 2, 3};
        std::swap(p[i], p[j]);
        EXPECT_TRUE(test::all_close(ops::transpose(a, i, j), ref_permute(a, p), 0, 0))
            << shape_str(s) << " " << i << "," << j;
      }
  EXPECT_TRUE(test::grads_ok([](const std::vector<Tensor>& v) { return ops::transpose(v[0], 0, 2); },
                             {test::randn({2, 3, 4}, 3)}));
  EXPECT_TRUE(test::grads_ok([](const std::vector<Tensor>& v) { return ops::transpose(v[0], -1, -2); },
                             {test::randn({3, 5}, 4)}));
}

TEST(ShapePermute, ThreeAndFourDimensional) {
  Tensor x = Tensor::from({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {2, 3, 2});
  // permute(2, 0, 1): out[k, i, j] = x[i, j, k].
  Tensor p = ops::permute(x, {2, 0, 1});
  EXPECT_EQ(p.shape(), (Shape{2, 2, 3}));
  EXPECT_EQ(p.to_vector(), (std::vector<double>{0, 2, 4, 6, 8, 10, 1, 3, 5, 7, 9, 11}));
  const std::vector<std::vector<std::int64_t>> perms3 = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                                         {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (const auto& d : perms3) {
    Tensor a = test::rand({3, 4, 5}, 5);
    EXPECT_TRUE(test::all_close(ops::permute(a, d), ref_permute(a, d), 0, 0));
  }
  const std::vector<std::vector<std::int64_t>> perms4 = {
      {0, 2, 1, 3}, {3, 2, 1, 0}, {1, 3, 0, 2}, {0, 3, 1, 2}, {2, 0, 3, 1}};
  for (const auto& d : perms4) {
    for (const Shape& s : {Shape{2, 3, 4, 5}, Shape{2, 1, 4, 1}, Shape{40, 3, 2, 50}}) {
      Tensor a = test::rand(s, 6);
      EXPECT_TRUE(test::all_close(ops::permute(a, d), ref_permute(a, d), 0, 0)) << shape_str(s);
    }
  }
  EXPECT_TRUE(test::all_close(ops::permute(x, {-1, 0, 1}), p, 0, 0));
  // Works on integer tensors too (a pure copy).
  Tensor xi = Tensor::from_ints({0, 1, 2, 3, 4, 5}, {2, 3});
  EXPECT_EQ(ops::permute(xi, {1, 0}).to_vector(), (std::vector<double>{0, 3, 1, 4, 2, 5}));
}

TEST(ShapePermute, LargeTensorsTakeTheParallelPaths) {
  // 35904 elements: above the threading threshold, with tile edges that are not multiples of 32.
  Tensor a = test::rand({64, 33, 17}, 50);
  const std::vector<std::vector<std::int64_t>> perms = {{2, 1, 0}, {1, 0, 2}, {0, 2, 1}, {1, 2, 0}, {2, 0, 1}};
  for (const auto& d : perms) EXPECT_TRUE(test::all_close(ops::permute(a, d), ref_permute(a, d), 0, 0));
  for (std::int64_t ax = 0; ax < 3; ++ax) {
    const std::int64_t cut = a.size(ax) / 3;
    Tensor head = ops::slice(a, ax, 0, cut), tail = ops::slice(a, ax, cut, a.size(ax));
    EXPECT_TRUE(test::all_close(ops::concat({head, tail}, ax), a, 0, 0)) << "axis " << ax;
  }
}

TEST(ShapePermute, Gradcheck) {
  EXPECT_TRUE(test::grads_ok(
      [](const std::vector<Tensor>& v) {
        return ops::permute(v[0], {1, 2, 0});
      },
      {test::randn({2, 3, 4}, 7)}));
  EXPECT_TRUE(test::grads_ok(
      [](const std::vector<Tensor>& v) {
        return ops::permute(v[0], {0, 2, 1, 3});
      },
      {test::randn({2, 3, 2, 2}, 8)}));
  EXPECT_TRUE(test::grads_ok(
      [](const std::vector<Tensor>& v) {
        return ops::permute(v[0], {3, 1, 0, 2});
      },
      {test::randn({2, 1, 3, 2}, 9)}));
}

TEST(ShapePermute, Errors) {
  Tensor x = Tensor::zeros({2, 3, 4});
  std::string msg = error_of([&] { ops::permute(x, {0, 1}); });
  EXPECT_TRUE(has(msg, "permute") && has(msg, "[2, 3, 4]")) << msg;
  EXPECT_THROW(ops::permute(x, {0, 1}), ShapeError);
  EXPECT_THROW(ops::permute(x, {0, 1, 1}), ValueError);
  EXPECT_THROW(ops::permute(x, {0, 1, 3}), ValueError);
  EXPECT_THROW(ops::transpose(x, 0, 3), ValueError);
  EXPECT_THROW(ops::transpose(x, -4, 0), ValueError);
}

TEST(ShapeSlice, EachAxisValuesAndGradcheck) {
  Tensor x = Tensor::from({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {2, 3, 2});
  EXPECT_EQ(ops::slice(x, 0, 1, 2).to_vector(), (std::vector<double>{6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(ops::slice(x, 1, 1, 3).to_vector(), (std::vector<double>{2, 3, 4, 5, 8, 9, 10, 11}));
  EXPECT_EQ(ops::slice(x, 1, 1, 3).shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(ops::slice(x, -1, 0, 1).to_vector(), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(ops::slice(x, 2, 1, 1).shape(), (Shape{2, 3, 0}));
  EXPECT_FALSE(ops::slice(x, 0, 0, 1).shares_storage_with(x));
  for (std::int64_t ax = 0; ax < 3; ++ax)
    EXPECT_TRUE(test::grads_ok([ax](const std::vector<Tensor>& v) { return ops::slice(v[0], ax, 1, 3); },
                               {test::randn({3, 4, 3}, 10 + ax)}))
        << "axis " << ax;
}

TEST(ShapeSlice, Errors) {
  Tensor x = Tensor::zeros({2, 3});
  std::string msg = error_of([&] { ops::slice(x, 1, 2, 4); });
  EXPECT_TRUE(has(msg, "slice") && has(msg, "[2, 3]") && has(msg, "[2, 4)")) << msg;
  EXPECT_THROW(ops::slice(x, 1, 2, 4), ValueError);
  EXPECT_THROW(ops::slice(x, 1, -1, 2), ValueError);
  EXPECT_THROW(ops::slice(x, 1, 2, 1), ValueError);
  EXPECT_THROW(ops::slice(x, 2, 0, 1), ValueError);
  EXPECT_THROW(ops::slice(Tensor::scalar(1.0), 0, 0, 1), ShapeError);
}

TEST(ShapeSplit, SplitChunkConcatRoundTrip) {
  Tensor x = test::rand({4, 6, 3}, 20);
  for (std::int64_t ax = 0; ax < 3; ++ax) {
    std::vector<Tensor> parts = ops::chunk(x, x.size(ax) == 3 ? 3 : 2, ax);
    EXPECT_TRUE(test::all_close(ops::concat(parts, ax), x, 0, 0)) << "axis " << ax;
  }
  std::vector<Tensor> pieces = ops::split(x, {1, 0, 5}, 1);
  ASSERT_EQ(pieces.size(), 3u);
  EXPECT_EQ(pieces[0].shape(), (Shape{4, 1, 3}));
  EXPECT_EQ(pieces[1].shape(), (Shape{4, 0, 3}));
  EXPECT_EQ(pieces[2].shape(), (Shape{4, 5, 3}));
  EXPECT_TRUE(test::all_close(pieces[2], ops::slice(x, 1, 1, 6), 0, 0));
  EXPECT_TRUE(test::all_close(ops::concat(pieces, -2), x, 0, 0));
  // Hand-checked concat along the last axis.
  Tensor a = Tensor::from({1, 2, 3, 4}, {2, 2});
  Tensor b = Tensor::from({5, 6}, {2, 1});
  EXPECT_EQ(ops::concat({a, b}, 1).to_vector(), (std::vector<double>{1, 2, 5, 3, 4, 6}));
  EXPECT_EQ(ops::concat({a, b.alias({1, 2})}, 0).to_vector(), (std::vector<double>{1, 2, 3, 4, 5, 6}));
}

TEST(ShapeSplit, Gradcheck) {
  // Pieces combined with different weights so a mixed-up gradient shows.
  EXPECT_TRUE(test::grads_ok(
      [](const std::vector<Tensor>& v) {
        std::vector<Tensor> p = ops::split(v[0], {1, 3}, 1);
        return ops::concat({p[1], p[0], p[0]}, 1);
      },
      {test::randn({2, 4, 2}, 21)}));
  EXPECT_TRUE(test::grads_ok(
      [](const std::vector<Tensor>& v) {
        std::vector<Tensor> p = ops::chunk(v[0], 3, -1);
        return ops::concat({p[2], p[0]}, 0);
      },
      {test::randn({2, 6}, 22)}));
  EXPECT_TRUE(test::grads_ok(
      [](const std::vector<Tensor>& v) {
        return ops::concat({v[0], v[1], v[2]}, 1);
      },
      {test::randn({2, 1, 3}, 23), test::randn({2, 2, 3}, 24), test::randn({2, 3, 3}, 25)}));
  EXPECT_TRUE(test::grads_ok(
      [](const std::vector<Tensor>& v) {
        return ops::concat({v[0], v[1]}, 0);
      },
      {test::randn({1, 3}, 26), test::randn({2, 3}, 27)}, {}, {0}));
}

TEST(ShapeSplit, Errors) {
  Tensor x = Tensor::zeros({2, 4});
  std::string msg = error_of([&] { ops::split(x, {1, 2}, 1); });
  EXPECT_TRUE(has(msg, "split") && has(msg, "[2, 4]")) << msg;
  EXPECT_THROW(ops::split(x, {1, 2}, 1), ShapeError);
  EXPECT_THROW(ops::split(x, {5, -1}, 1), ValueError);
  EXPECT_THROW(ops::split(x, {2}, 2), ValueError);
  EXPECT_THROW(ops::chunk(x, 3, 1), ShapeError);
  EXPECT_THROW(ops::chunk(x, 0, 1), ValueError);

  msg = error_of([&] { ops::concat({x, Tensor::zeros({3, 3})}, 1); });
  EXPECT_TRUE(has(msg, "concat") && has(msg, "[2, 4]") && has(msg, "[3, 3]")) << msg;
  EXPECT_THROW(ops::concat({x, Tensor::zeros({3, 3})}, 1), ShapeError);
  EXPECT_THROW(ops::concat({x, Tensor::zeros({2, 4, 1})}, 1), ShapeError);
  EXPECT_THROW(ops::concat({x, Tensor::zeros({2, 4}, DType::f64)}, 0), DTypeError);
  EXPECT_THROW(ops::concat({}, 0), ValueError);
  EXPECT_THROW(ops::concat({x}, 2), ValueError);
}

TEST(ShapeSplitHeads, EqualsSplitReshapePermute) {
  // The fused head layout against its composition, for 1–3 pieces, and bitwise (it only moves).
  for (std::int64_t pieces : {1, 2, 3}) {
    const std::int64_t B = 2, T = 5, H = 3, d = 4;
    Tensor x = test::rand({B, T, pieces * H * d}, 40 + static_cast<std::uint64_t>(pieces), -1, 1, DType::f32);
    std::vector<Tensor> fused = ops::split_heads(x, pieces, H);
    std::vector<Tensor> parts = ops::chunk(x, pieces, 2);
    ASSERT_EQ(fused.size(), static_cast<std::size_t>(pieces));
    for (std::int64_t p = 0; p < pieces; ++p) {
      const Tensor want = ops::permute(ops::reshape(parts[static_cast<std::size_t>(p)], {B, T, H, d}), {0, 2, 1, 3});
      EXPECT_EQ(fused[static_cast<std::size_t>(p)].shape(), (Shape{B, H, T, d}));
      EXPECT_TRUE(test::all_close(fused[static_cast<std::size_t>(p)], want, 0, 0)) << "piece " << p;
    }
  }
}

TEST(ShapeSplitHeads, GradcheckWithAnUnusedPiece) {
  // Pieces weighted differently, the middle one unused (its gradient is undefined: zeros).
  EXPECT_TRUE(test::grads_ok(
      [](const std::vector<Tensor>& v) {
        std::vector<Tensor> p = ops::split_heads(v[0], 3, 2);
        return p[0] * 2.0 + ops::square(p[2]);
      },
      {test::randn({2, 3, 12}, 45)}));
  EXPECT_TRUE(test::grads_ok([](const std::vector<Tensor>& v) { return ops::split_heads(v[0], 1, 4)[0]; },
                             {test::randn({1, 2, 8}, 46)}));
}

TEST(ShapeSplitHeads, Errors) {
  EXPECT_TRUE(test::contains(test::error_of([] {
                               ops::split_heads(Tensor::zeros({2, 3, 10}), 3, 2);
                             }),
                             "divisible by 3 pieces × 2 heads"));
  EXPECT_TRUE(test::contains(test::error_of([] { ops::split_heads(Tensor::zeros({2, 12}), 3, 2); }), "[B, T, C]"));
}

TEST(ShapeSqueeze, UnsqueezeSqueezeValuesViewsAndGradcheck) {
  Tensor x = Tensor::from({1, 2, 3}, {3});
  Tensor u0 = ops::unsqueeze(x, 0), u1 = ops::unsqueeze(x, 1), ul = ops::unsqueeze(x, -1);
  EXPECT_EQ(u0.shape(), (Shape{1, 3}));
  EXPECT_EQ(u1.shape(), (Shape{3, 1}));
  EXPECT_EQ(ul.shape(), (Shape{3, 1}));
  EXPECT_TRUE(u1.shares_storage_with(x));
  EXPECT_EQ(ops::squeeze(u0, 0).shape(), (Shape{3}));
  EXPECT_EQ(ops::squeeze(u1, -1).shape(), (Shape{3}));
  EXPECT_EQ(ops::squeeze(u1, -1).to_vector(), x.to_vector());
  EXPECT_EQ(ops::squeeze(Tensor::zeros({1}), 0).shape(), (Shape{}));
  EXPECT_EQ(ops::unsqueeze(Tensor::scalar(1.0), 0).shape(), (Shape{1}));
  EXPECT_TRUE(
      test::grads_ok([](const std::vector<Tensor>& v) { return ops::unsqueeze(v[0], 1); }, {test::randn({2, 3}, 30)}));
  EXPECT_TRUE(
      test::grads_ok([](const std::vector<Tensor>& v) { return ops::squeeze(v[0], 1); }, {test::randn({2, 1, 3}, 31)}));
}

TEST(ShapeSqueeze, Errors) {
  std::string msg = error_of([] { ops::squeeze(Tensor::zeros({2, 3}), 1); });
  EXPECT_TRUE(has(msg, "squeeze") && has(msg, "[2, 3]")) << msg;
  EXPECT_THROW(ops::squeeze(Tensor::zeros({2, 3}), 1), ShapeError);
  EXPECT_THROW(ops::squeeze(Tensor::zeros({2, 1}), 2), ValueError);
  EXPECT_THROW(ops::squeeze(Tensor::scalar(1.0), 0), ShapeError);
  EXPECT_THROW(ops::unsqueeze(Tensor::zeros({2, 3}), 3), ValueError);
  EXPECT_THROW(ops::unsqueeze(Tensor::zeros({2, 3}), -4), ValueError);
}

TEST(ShapeChain, BackwardThroughViewsAndCopies) {
  // reshape -> transpose -> slice -> sum of everything: each x element's gradient is 1 where it was kept.
  Tensor x = test::randn({2, 6}, 40).set_requires_grad(true);
  Tensor y = ops::slice(ops::transpose(ops::reshape(x, {2, 3, 2}), 1, 2), 2, 0, 2);  // [2, 2, 2]: keeps j < 2
  y.backward(Tensor::ones(y.shape(), DType::f64));
  std::vector<double> gx = x.grad().to_vector();
  for (std::int64_t i = 0; i < 12; ++i) EXPECT_EQ(gx[i], (i % 6) / 2 < 2 ? 1.0 : 0.0) << i;
}

}  // namespace gattn
