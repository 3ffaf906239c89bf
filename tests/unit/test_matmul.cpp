// matmul and linear: forward against hand-computed and naive-loop products (every transpose
// combination, batched and shared-b), gradchecks in f64 including size-1 dims, and typed errors.
#include <gtest/gtest.h>

#include "ops/matmul.h"
#include "ops/unary.h"
#include "test_util.h"

namespace gattn {

namespace {

// Naive reference: op(a_i) · op(b_i) in double, b shared when 2-D.
Tensor ref_matmul(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  const Shape& sa = a.shape();
  const Shape& sb = b.shape();
  const std::int64_t ra = a.dim(), rb = b.dim();
  const std::int64_t M = ta ? sa[ra - 1] : sa[ra - 2], K = ta ? sa[ra - 2] : sa[ra - 1];
  const std::int64_t N = tb ? sb[rb - 2] : sb[rb - 1];
  Shape out_shape(sa.begin(), sa.end() - 2);
  const std::int64_t batch = shape_numel(out_shape);
  out_shape.push_back(M);
  out_shape.push_back(N);
  std::vector<double> va = a.to_vector(), vb = b.to_vector(), vc(batch * M * N, 0.0);
  const bool shared = rb == 2;
  for (std::int64_t i = 0; i < batch; ++i) {
    const double* pa = va.data() + i * M * K;
    const double* pb = vb.data() + (shared ? 0 : i * K * N);
    for (std::int64_t m = 0; m < M; ++m)
      for (std::int64_t n = 0; n < N; ++n) {
        double s = 0;
        for (std::int64_t k = 0; k < K; ++k)
          s += (ta ? pa[k * M + m] : pa[m * K + k]) * (tb ? pb[n * K + k] : pb[k * N + n]);
        vc[(i * M + m) * N + n] = s;
      }
  }
  return Tensor::from(vc, out_shape, DType::f64);
}

// Stored shape of an operand whose op() is rows × cols, with batch dims in front.
Shape stored(Shape batch, std::int64_t rows, std::int64_t cols, bool trans) {
  batch.push_back(trans ? cols : rows);
  batch.push_back(trans ? rows : cols);
  return batch;
}

using test::error_of;

TEST(LinearGelu, OnTheCpuMatchesGeluOfLinear) {
  // The fused CPU op (GEMM, then bias and GELU in one pass; GELU' and the bias gradient in one
  // pass) against the two ops composed: values and all three gradients, f64 and f32, with and
  // without a bias, and more rows than the bias gradient has chunks.
  for (DType dt : {DType::f64, DType::f32})
    for (bool with_bias : {true, false}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + (with_bias ? " bias" : " no bias"));
      const double tol = dt == DType::f64 ? 1e-13 : 2e-6;
      auto make = [&](const Shape& s, std::uint64_t seed) {
        return test::rand(s, seed, -1, 1, dt).set_requires_grad(true);
      };
      Tensor x = make({3, 50, 7}, 41), w = make({6, 7}, 42), b = with_bias ? make({6}, 43) : Tensor();
      Tensor x2 = x.detach().set_requires_grad(true), w2 = w.detach().set_requires_grad(true);
      Tensor b2 = with_bias ? b.detach().set_requires_grad(true) : Tensor();
      const Tensor g = test::rand({3, 50, 6}, 44, -1, 1, dt);
      Tensor fused = ops::linear_gelu(x, w, b), composed = ops::gelu(ops::linear(x2, w2, b2));
      EXPECT_TRUE(test::all_close(fused, composed, tol, tol));
      fused.backward(g);
      composed.backward(g);
      EXPECT_TRUE(test::all_close(x.grad(), x2.grad(), tol, tol));
      EXPECT_TRUE(test::all_close(w.grad(), w2.grad(), tol, tol));
      if (with_bias) {
        EXPECT_TRUE(test::all_close(b.grad(), b2.grad(), tol, tol));
      }
    }
  const Tensor x = test::rand({3, 5, 7}, 41), w = test::rand({6, 7}, 42), b = test::rand({6}, 43);
  EXPECT_TRUE(
      test::grads_ok([](const std::vector<Tensor>& in) { return ops::linear_gelu(in[0], in[1], in[2]); }, {x, w, b}));
  EXPECT_THROW(ops::linear_gelu(x, test::rand({6, 8}, 44)), ShapeError);
}

}  // namespace

TEST(Matmul, HandComputed) {
  Tensor a = Tensor::from({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = Tensor::from({7, 8, 9, 10, 11, 12}, {3, 2});
  // [1 2 3; 4 5 6] · [7 8; 9 10; 11 12] = [58 64; 139 154]
  EXPECT_TRUE(test::all_close(ops::matmul(a, b), Tensor::from({58, 64, 139, 154}, {2, 2})));
  // aᵀ as stored [3, 2] with trans_a gives the same product; so does bᵀ with trans_b.
  Tensor at = Tensor::from({1, 4, 2, 5, 3, 6}, {3, 2});
  Tensor bt = Tensor::from({7, 9, 11, 8, 10, 12}, {2, 3});
  EXPECT_TRUE(test::all_close(ops::matmul(at, b, true, false), Tensor::from({58, 64, 139, 154}, {2, 2})));
  EXPECT_TRUE(test::all_close(ops::matmul(a, bt, false, true), Tensor::from({58, 64, 139, 154}, {2, 2})));
  EXPECT_TRUE(test::all_close(ops::matmul(at, bt, true, true), Tensor::from({58, 64, 139, 154}, {2, 2})));
  // aᵀ·a = [17 22 27; 22 29 36; 27 36 45]
  EXPECT_TRUE(
      test::all_close(ops::matmul(a, a, true, false), Tensor::from({17, 22, 27, 22, 29, 36, 27, 36, 45}, {3, 3})));
}

TEST(Matmul, AllTransposeCombinationsBothDtypes) {
  const std::int64_t M = 5, K = 7, N = 3;
  for (DType dt : {DType::f32, DType::f64})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        Tensor a = test::rand(stored({}, M, K, ta), 1, -1, 1, dt);
        Tensor b = test::rand(stored({}, K, N, tb), 2, -1, 1, dt);
        Tensor c = ops::matmul(a, b, ta, tb);
        EXPECT_EQ(c.dtype(), dt);
        EXPECT_TRUE(test::all_close(c, ref_matmul(a, b, ta, tb), 1e-5, 1e-5)) << "ta=" << ta << " tb=" << tb;
      }
}

TEST(Matmul, BatchedEqualBatchDims) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      Tensor a = test::rand(stored({2, 3}, 4, 5, ta), 3);
      Tensor b = test::rand(stored({2, 3}, 5, 6, tb), 4);
      Tensor c = ops::matmul(a, b, ta, tb);
      EXPECT_EQ(c.shape(), (Shape{2, 3, 4, 6}));
      EXPECT_TRUE(test::all_close(c, ref_matmul(a, b, ta, tb), 1e-12, 1e-12)) << "ta=" << ta << " tb=" << tb;
    }
}

TEST(Matmul, SharedTwoDimensionalB) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      Tensor a = test::rand(stored({3, 2}, 4, 5, ta), 5);
      Tensor b = test::rand(stored({}, 5, 6, tb), 6);
      Tensor c = ops::matmul(a, b, ta, tb);
      EXPECT_EQ(c.shape(), (Shape{3, 2, 4, 6}));
      EXPECT_TRUE(test::all_close(c, ref_matmul(a, b, ta, tb), 1e-12, 1e-12)) << "ta=" << ta << " tb=" << tb;
    }
}

TEST(Matmul, ManySmallMatricesInParallel) {
  // Enough tiny products that the batch loop runs in parallel; each must still be its own product.
  Tensor a = test::rand({512, 8, 8}, 7, -1, 1, DType::f32);
  Tensor b = test::rand({512, 8, 8}, 8, -1, 1, DType::f32);
  EXPECT_TRUE(test::all_close(ops::matmul(a, b), ref_matmul(a, b, false, false), 1e-5, 1e-5));
  EXPECT_TRUE(test::all_close(ops::matmul(a, b, true, true), ref_matmul(a, b, true, true), 1e-5, 1e-5));
}

TEST(Matmul, EmptyInnerDimensionGivesZeros) {
  Tensor c = ops::matmul(Tensor::ones({3, 0}), Tensor::ones({0, 2}));
  EXPECT_EQ(c.shape(), (Shape{3, 2}));
  for (double v : c.to_vector()) EXPECT_EQ(v, 0.0);
  EXPECT_EQ(ops::matmul(Tensor::ones({0, 4, 3}), Tensor::ones({3, 2})).shape(), (Shape{0, 4, 2}));
}

TEST(Matmul, GradcheckEveryTransposeBatchedAndShared) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      auto f = [ta, tb](const std::vector<Tensor>& v) { return ops::matmul(v[0], v[1], ta, tb); };
      // Plain 2-D.
      EXPECT_TRUE(test::grads_ok(f, {test::randn(stored({}, 3, 4, ta), 10), test::randn(stored({}, 4, 2, tb), 11)}));
      // Equal batch dims.
      EXPECT_TRUE(
          test::grads_ok(f, {test::randn(stored({2, 2}, 3, 4, ta), 12), test::randn(stored({2, 2}, 4, 2, tb), 13)}));
      // Shared b: its gradient sums over the batch.
      EXPECT_TRUE(test::grads_ok(f, {test::randn(stored({3}, 2, 4, ta), 14), test::randn(stored({}, 4, 3, tb), 15)}));
    }
}

TEST(Matmul, GradcheckSizeOneDims) {
  struct Case {
    Shape batch;
    std::int64_t M, K, N;
    bool shared;
  };
  const std::vector<Case> cases = {{{}, 1, 3, 2, true},  {{}, 3, 1, 2, true},   {{}, 2, 3, 1, true},
                                   {{}, 1, 1, 1, true},  {{1}, 2, 3, 2, false}, {{1}, 1, 1, 1, false},
                                   {{1}, 2, 2, 3, true}, {{2}, 1, 2, 1, true},  {{2}, 3, 1, 1, false}};
  std::uint64_t seed = 20;
  for (const Case& c : cases)
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        auto f = [ta, tb](const std::vector<Tensor>& v) { return ops::matmul(v[0], v[1], ta, tb); };
        Tensor a = test::randn(stored(c.batch, c.M, c.K, ta), seed++);
        Tensor b = test::randn(stored(c.shared ? Shape{} : c.batch, c.K, c.N, tb), seed++);
        EXPECT_TRUE(test::grads_ok(f, {a, b}))
            << shape_str(a.shape()) << " x " << shape_str(b.shape()) << " ta=" << ta << " tb=" << tb;
      }
}

TEST(Matmul, GradientOfOnlyOneOperand) {
  Tensor a = test::randn({2, 3, 4}, 30).set_requires_grad(true);
  Tensor b = test::randn({4, 5}, 31);
  ops::matmul(a, b).backward(Tensor::ones({2, 3, 5}, DType::f64));
  ASSERT_TRUE(a.grad().defined());
  // dA = g · bᵀ with g all ones: every row of dA holds the row sums of b.
  std::vector<double> vb = b.to_vector(), ga = a.grad().to_vector();
  for (std::int64_t r = 0; r < 6; ++r)
    for (std::int64_t k = 0; k < 4; ++k) {
      double s = 0;
      for (std::int64_t n = 0; n < 5; ++n) s += vb[k * 5 + n];
      EXPECT_NEAR(ga[r * 4 + k], s, 1e-12);
    }
}

TEST(Matmul, ErrorsAreTypedAndNameShapes) {
  std::string msg = error_of([] { ops::matmul(Tensor::zeros({2, 3}), Tensor::zeros({4, 5})); });
  EXPECT_NE(msg.find("matmul"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[2, 3]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[4, 5]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("inner dimensions 3 and 4"), std::string::npos) << msg;
  EXPECT_THROW(ops::matmul(Tensor::zeros({2, 3}), Tensor::zeros({4, 5})), ShapeError);

  // With a transpose the inner dims are the transposed ones, and the message says which operand.
  msg = error_of([] { ops::matmul(Tensor::zeros({2, 3}), Tensor::zeros({2, 5}), false, true); });
  EXPECT_NE(msg.find("inner dimensions 3 and 5"), std::string::npos) << msg;
  EXPECT_NE(msg.find("trans_b"), std::string::npos) << msg;

  msg = error_of([] { ops::matmul(Tensor::zeros({2, 3, 4}), Tensor::zeros({5, 4, 6})); });
  EXPECT_NE(msg.find("matmul"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[2, 3, 4]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[5, 4, 6]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("batch"), std::string::npos) << msg;
  EXPECT_THROW(ops::matmul(Tensor::zeros({2, 3, 4}), Tensor::zeros({5, 4, 6})), ShapeError);
  // A batched b needs a's batch dims exactly (no broadcasting of a 2-D a against a 3-D b).
  EXPECT_THROW(ops::matmul(Tensor::zeros({3, 4}), Tensor::zeros({2, 4, 6})), ShapeError);
  EXPECT_THROW(ops::matmul(Tensor::zeros({2, 3, 4}), Tensor::zeros({1, 2, 4, 6})), ShapeError);

  msg = error_of([] { ops::matmul(Tensor::zeros({2, 3}), Tensor::zeros({3, 4}, DType::f64)); });
  EXPECT_NE(msg.find("matmul"), std::string::npos) << msg;
  EXPECT_NE(msg.find("f32[2, 3]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("f64[3, 4]"), std::string::npos) << msg;
  EXPECT_THROW(ops::matmul(Tensor::zeros({2, 3}), Tensor::zeros({3, 4}, DType::f64)), DTypeError);
  EXPECT_THROW(ops::matmul(Tensor::zeros({2, 3}, DType::i32), Tensor::zeros({3, 4}, DType::i32)), DTypeError);

  msg = error_of([] { ops::matmul(Tensor::zeros({3}), Tensor::zeros({3, 4})); });
  EXPECT_NE(msg.find("[3]"), std::string::npos) << msg;
  EXPECT_THROW(ops::matmul(Tensor::zeros({3}), Tensor::zeros({3, 4})), ShapeError);
}

TEST(Linear, ForwardWithAndWithoutBias) {
  // x [2, 3], W [2, 3] (out = 2): y = x Wᵀ + b.
  Tensor x = Tensor::from({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor w = Tensor::from({1, 0, -1, 2, 1, 0}, {2, 3});
  Tensor b = Tensor::from({10, 20}, {2});
  // rows: [1-3, 2+2] = [-2, 4]; [4-6, 8+5] = [-2, 13]
  EXPECT_TRUE(test::all_close(ops::linear(x, w), Tensor::from({-2, 4, -2, 13}, {2, 2})));
  EXPECT_TRUE(test::all_close(ops::linear(x, w, b), Tensor::from({8, 24, 8, 33}, {2, 2})));
}

TEST(Linear, ThreeDimensionalInputMatchesMatmul) {
  for (DType dt : {DType::f32, DType::f64}) {
    Tensor x = test::rand({2, 3, 5}, 40, -1, 1, dt);
    Tensor w = test::rand({4, 5}, 41, -1, 1, dt);
    Tensor b = test::rand({4}, 42, -1, 1, dt);
    Tensor y = ops::linear(x, w, b);
    EXPECT_EQ(y.shape(), (Shape{2, 3, 4}));
    Tensor ref = ref_matmul(x, w, false, true);
    std::vector<double> vr = ref.to_vector(), vb = b.to_vector();
    for (std::size_t i = 0; i < vr.size(); ++i) vr[i] += vb[i % 4];
    EXPECT_TRUE(test::all_close(y, Tensor::from(vr, y.shape(), DType::f64), 1e-5, 1e-5));
    EXPECT_TRUE(test::all_close(ops::linear(x, w), ref, 1e-5, 1e-5));
  }
}

TEST(Linear, Gradcheck) {
  auto with_bias = [](const std::vector<Tensor>& v) { return ops::linear(v[0], v[1], v[2]); };
  auto no_bias = [](const std::vector<Tensor>& v) { return ops::linear(v[0], v[1]); };
  EXPECT_TRUE(test::grads_ok(with_bias, {test::randn({4, 3}, 50), test::randn({2, 3}, 51), test::randn({2}, 52)}));
  EXPECT_TRUE(test::grads_ok(no_bias, {test::randn({4, 3}, 53), test::randn({2, 3}, 54)}));
  EXPECT_TRUE(test::grads_ok(with_bias, {test::randn({2, 3, 4}, 55), test::randn({5, 4}, 56), test::randn({5}, 57)}));
  EXPECT_TRUE(test::grads_ok(no_bias, {test::randn({2, 3, 4}, 58), test::randn({5, 4}, 59)}));
  // Size-1 dims: one row, one input feature, one output feature, a 1-D x.
  EXPECT_TRUE(test::grads_ok(with_bias, {test::randn({1, 3}, 60), test::randn({2, 3}, 61), test::randn({2}, 62)}));
  EXPECT_TRUE(test::grads_ok(with_bias, {test::randn({4, 1}, 63), test::randn({2, 1}, 64), test::randn({2}, 65)}));
  EXPECT_TRUE(test::grads_ok(with_bias, {test::randn({4, 3}, 66), test::randn({1, 3}, 67), test::randn({1}, 68)}));
  EXPECT_TRUE(test::grads_ok(with_bias, {test::randn({3}, 69), test::randn({2, 3}, 70), test::randn({2}, 71)}));
  // Only some inputs differentiated.
  EXPECT_TRUE(
      test::grads_ok(with_bias, {test::randn({4, 3}, 72), test::randn({2, 3}, 73), test::randn({2}, 74)}, {}, {0}));
  EXPECT_TRUE(
      test::grads_ok(with_bias, {test::randn({4, 3}, 75), test::randn({2, 3}, 76), test::randn({2}, 77)}, {}, {1, 2}));
}

TEST(Linear, BiasGradientIsColumnSumsOverAllRows) {
  // Wide enough that the column sums use more than one column block.
  Tensor x = test::randn({3, 7, 4}, 80);
  Tensor w = test::randn({600, 4}, 81);
  Tensor b = Tensor::zeros({600}, DType::f64).set_requires_grad(true);
  Tensor g = test::randn({3, 7, 600}, 82);
  ops::linear(x, w, b).backward(g);
  std::vector<double> vg = g.to_vector(), db = b.grad().to_vector();
  for (std::int64_t j = 0; j < 600; ++j) {
    double s = 0;
    for (std::int64_t r = 0; r < 21; ++r) s += vg[r * 600 + j];
    EXPECT_NEAR(db[j], s, 1e-12);
  }
}

TEST(Linear, ErrorsAreTyped) {
  std::string msg = error_of([] { ops::linear(Tensor::zeros({2, 3}), Tensor::zeros({4, 5})); });
  EXPECT_NE(msg.find("linear"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[2, 3]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[4, 5]"), std::string::npos) << msg;
  EXPECT_THROW(ops::linear(Tensor::zeros({2, 3}), Tensor::zeros({4, 5})), ShapeError);
  EXPECT_THROW(ops::linear(Tensor::zeros({2, 3}), Tensor::zeros({3})), ShapeError);
  EXPECT_THROW(ops::linear(Tensor::zeros({2, 3}), Tensor::zeros({4, 3}), Tensor::zeros({3})), ShapeError);
  EXPECT_THROW(ops::linear(Tensor::scalar(1.0), Tensor::zeros({4, 1})), ShapeError);
  EXPECT_THROW(ops::linear(Tensor::zeros({2, 3}), Tensor::zeros({4, 3}, DType::f64)), DTypeError);
  EXPECT_THROW(ops::linear(Tensor::zeros({2, 3}), Tensor::zeros({4, 3}), Tensor::zeros({4}, DType::f64)), DTypeError);
}

}  // namespace gattn
