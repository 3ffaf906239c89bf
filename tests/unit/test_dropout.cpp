// dropout: reproducible masks from the Philox generator (and their exact layout, which the CUDA
// kernel must match), kept fraction and scaling, identity in eval / p = 0, a gradcheck with a fixed
// generator, and invalid p.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/tensor/philox.h"
#include "ops/nn_functional.h"
#include "test_util.h"

namespace gattn {
namespace {

TEST(Dropout, SameSeedSameMask) {
  Tensor x = test::randn({8, 33}, 71, 1.0, DType::f32);
  Generator a(5), b(5), c(6);
  std::vector<double> ya = ops::dropout(x, 0.4, a).to_vector();
  EXPECT_EQ(ya, ops::dropout(x, 0.4, b).to_vector());
  EXPECT_NE(ya, ops::dropout(x, 0.4, c).to_vector());
  // The generator advances: a second draw from the same generator gives another mask.
  EXPECT_NE(ya, ops::dropout(x, 0.4, a).to_vector());
  EXPECT_EQ(a.state().offset, 2u * 264u);  // 264 = 8·33 words per draw, already a multiple of 4
}

TEST(Dropout, KeptFractionAndScale) {
  const double p = 0.3;
  Tensor x = Tensor::ones({100000});
  Generator gen(7);
  std::vector<double> y = ops::dropout(x, p, gen).to_vector();
  std::int64_t kept = 0;
  double sum = 0;
  for (double v : y) {
    if (v != 0.0) {
      ++kept;
      EXPECT_NEAR(v, 1.0 / (1.0 - p), 1e-6);
    }
    sum += v;
  }
  // Binomial(1e5, 0.7): σ of the fraction ≈ 0.0014, so 0.01 is ~7σ.
  EXPECT_NEAR(static_cast<double>(kept) / 1e5, 1.0 - p, 0.01);
  EXPECT_NEAR(sum / 1e5, 1.0, 0.015);  // inverted dropout keeps the expectation
}

TEST(Dropout, MaskFollowsPhiloxLayout) {
  // Element i is dropped iff the uniform from word (offset + i) is < p, with the offset where
  // the draw starts (here 8: a previous draw reserved 5 words, rounded up to 8).
  const double p = 0.5;
  const std::uint64_t seed = 1234, stream = 3;
  Generator gen(seed, stream);
  gen.reserve(5);
  Tensor x = Tensor::ones({37}, DType::f64);
  std::vector<double> y = ops::dropout(x, p, gen).to_vector();
  for (std::uint64_t i = 0; i < 37; ++i) {
    const std::uint64_t word = 8 + i;
    const float u = philox_uniform(philox_block(seed, stream, word / 4).v[word % 4]);
    EXPECT_EQ(y[i], u < p ? 0.0 : 2.0) << i;
  }
}

TEST(Dropout, IdentityInEvalAndForZeroP) {
  Tensor x = test::randn({4, 5}, 72, 1.0, DType::f32);
  Generator gen(9);
  EXPECT_EQ(ops::dropout(x, 0.5, gen, /*training=*/false).to_vector(), x.to_vector());
  EXPECT_EQ(ops::dropout(x, 0.0, gen).to_vector(), x.to_vector());
  EXPECT_EQ(gen.state().offset, 0u);  // nothing drawn
  // Gradient flows unchanged through the identity.
  Tensor xg = x.clone().set_requires_grad(true);
  ops::dropout(xg, 0.5, gen, false).backward(Tensor::full({4, 5}, 2.0));
  for (double v : xg.grad().to_vector()) EXPECT_EQ(v, 2.0);
}

TEST(Dropout, BackwardUsesTheForwardMask) {
  Tensor x = Tensor::full({50}, 3.0).set_requires_grad(true);
  Generator gen(11);
  Tensor y = ops::dropout(x, 0.25, gen);
  y.backward(Tensor::ones({50}));
  std::vector<double> yv = y.to_vector(), gv = x.grad().to_vector();
  for (std::size_t i = 0; i < yv.size(); ++i) EXPECT_NEAR(gv[i], yv[i] / 3.0, 1e-6) << i;
}

TEST(Dropout, GradcheckWithFixedGenerator) {
  // A fresh generator per evaluation: every forward of the check draws the same mask.
  for (double p : {0.2, 0.7}) {
    auto f = [p](const std::vector<Tensor>& in) {
      Generator gen(42);
      return ops::dropout(in[0], p, gen);
    };
    EXPECT_TRUE(test::grads_ok(f, {test::randn({3, 7}, 73)})) << p;
    EXPECT_TRUE(test::grads_ok(f, {test::randn({1, 1, 5}, 74)})) << p;
  }
}

TEST(Dropout, InvalidPIsValueError) {
  Tensor x = Tensor::ones({4});
  Generator gen(1);
  EXPECT_THROW(ops::dropout(x, -0.1, gen), ValueError);
  EXPECT_THROW(ops::dropout(x, 1.0, gen), ValueError);
  EXPECT_THROW(ops::dropout(x, std::numeric_limits<double>::quiet_NaN(), gen), ValueError);
  EXPECT_THROW(ops::dropout(x, 1.0, gen, false), ValueError);
  EXPECT_THROW(ops::dropout(Tensor::arange(4), 0.5, gen), DTypeError);
}

}  // namespace
}  // namespace gattn
