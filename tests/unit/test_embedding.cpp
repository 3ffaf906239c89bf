// embedding: row gather for index tensors of any shape, accumulation over repeated indices,
// gradchecks, a deterministic wide backward, and the typed errors (bad index names it and V).
#include <gtest/gtest.h>

#include "ops/nn_functional.h"
#include "test_util.h"

namespace gattn {
namespace {

TEST(Embedding, ForwardPicksRows) {
  Tensor w = Tensor::from({0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32}, {4, 3});
  Tensor y = ops::embedding(w, Tensor::from_ints({1, 0, 3, 3}, {2, 2}));
  EXPECT_EQ(y.shape(), (Shape{2, 2, 3}));
  EXPECT_EQ(y.to_vector(), (std::vector<double>{10, 11, 12, 0, 1, 2, 30, 31, 32, 30, 31, 32}));
  // A scalar index gives one row of shape [C].
  Tensor one = ops::embedding(w, Tensor::from_ints({2}, {}));
  EXPECT_EQ(one.shape(), (Shape{3}));
  EXPECT_EQ(one.to_vector(), (std::vector<double>{20, 21, 22}));
}

TEST(Embedding, RepeatedIndicesAccumulate) {
  Tensor w = Tensor::zeros({4, 2}).set_requires_grad(true);
  Tensor idx = Tensor::from_ints({2, 2, 0, 2}, {4});
  ops::embedding(w, idx).backward(Tensor::from({1, 2, 10, 20, 100, 200, 1000, 2000}, {4, 2}));
  // Row 2 gets positions 0, 1 and 3; row 0 gets position 2; rows 1 and 3 nothing.
  EXPECT_EQ(w.grad().to_vector(), (std::vector<double>{100, 200, 0, 0, 1011, 2022, 0, 0}));
}

TEST(Embedding, Gradcheck) {
  auto f = [](const std::vector<Tensor>& in) { return ops::embedding(in[0], in[1]); };
  EXPECT_TRUE(test::grads_ok(f, {test::randn({5, 3}, 41), Tensor::from_ints({4, 0, 4, 2, 4, 1}, {2, 3})}));
  EXPECT_TRUE(test::grads_ok(f, {test::randn({1, 1}, 42), Tensor::from_ints({0, 0}, {2, 1})}));
  EXPECT_TRUE(test::grads_ok(f, {test::randn({3, 4}, 43), Tensor::from_ints({1}, {})}));
}

TEST(Embedding, WideBackwardMatchesNaiveAndIsDeterministic) {
  // Many columns (several column blocks) and many repeats: the result must equal a plain
  // sequential scatter-add in index order, bit for bit, every run.
  const std::int64_t V = 7, C = 100, N = 500;
  Tensor idx = Tensor::empty({N}, DType::i32);
  Generator gen(44);
  gen.randint_(idx, V);
  Tensor g = test::randn({N, C}, 45, 1.0, DType::f32);
  std::vector<float> naive(V * C, 0.0f);
  const std::int32_t* pi = idx.data<std::int32_t>();
  const float* pg = g.data<float>();
  for (std::int64_t i = 0; i < N; ++i)
    for (std::int64_t j = 0; j < C; ++j) naive[pi[i] * C + j] += pg[i * C + j];
  for (int run = 0; run < 2; ++run) {
    Tensor w = Tensor::zeros({V, C}).set_requires_grad(true);
    ops::embedding(w, idx).backward(g);
    const float* got = w.grad().data<float>();
    for (std::int64_t k = 0; k < V * C; ++k) ASSERT_EQ(got[k], naive[k]) << k;
  }
}

TEST(Embedding, BadIndexIsValueErrorNamingIt) {
  Tensor w = Tensor::zeros({5, 2});
  try {
    ops::embedding(w, Tensor::from_ints({0, 7, 1}, {3}));
    ADD_FAILURE() << "no ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("index 7"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("V = 5"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ops::embedding(w, Tensor::from_ints({5}, {1})), ValueError);
  EXPECT_THROW(ops::embedding(w, Tensor::from_ints({-1}, {1})), ValueError);
}

TEST(Embedding, TypedErrors) {
  EXPECT_THROW(ops::embedding(Tensor::zeros({5, 2}), Tensor::from({1, 2}, {2})), DTypeError);
  EXPECT_THROW(ops::embedding(Tensor::arange(5), Tensor::from_ints({1}, {1})), DTypeError);
  EXPECT_THROW(ops::embedding(Tensor::zeros({5}), Tensor::from_ints({1}, {1})), ShapeError);
  EXPECT_THROW(ops::embedding(Tensor::zeros({5, 2, 3}), Tensor::from_ints({1}, {1})), ShapeError);
}

}  // namespace
}  // namespace gattn
