// Tensor core: factories, conversions, views, Philox known answers, dtype and shape errors.
#include <gtest/gtest.h>

#include "core/tensor/philox.h"
#include "core/tensor/random.h"
#include "core/tensor/tensor.h"
#include "test_util.h"

namespace gattn {

TEST(Tensor, FactoriesAndMetadata) {
  Tensor z = Tensor::zeros({2, 3});
  EXPECT_EQ(z.numel(), 6);
  EXPECT_EQ(z.dim(), 2);
  EXPECT_EQ(z.size(-1), 3);
  EXPECT_EQ(z.dtype(), DType::f32);
  EXPECT_EQ(z.str(), "f32[2, 3]");
  for (double v : z.to_vector()) EXPECT_EQ(v, 0.0);
  Tensor f = Tensor::full({4}, 2.5, DType::f64);
  for (double v : f.to_vector()) EXPECT_EQ(v, 2.5);
  EXPECT_EQ(Tensor::scalar(3.0).item(), 3.0);
  EXPECT_EQ(Tensor::scalar(3.0).dim(), 0);
  Tensor a = Tensor::arange(5);
  EXPECT_EQ(a.dtype(), DType::i32);
  EXPECT_EQ(a.at(4), 4.0);
}

TEST(Tensor, ConversionsRoundTrip) {
  Tensor x = Tensor::from({1.5, -2.25, 3.0}, {3}, DType::f64);
  Tensor f = x.to(DType::f32);
  EXPECT_EQ(f.dtype(), DType::f32);
  EXPECT_EQ(f.to_vector(), x.to_vector());
  Tensor h = x.to(DType::bf16);
  EXPECT_EQ(h.to_vector(), x.to_vector());  // exactly representable in bf16
  Tensor i = x.to(DType::i32);
  EXPECT_EQ(i.at(1), -2.0);
}

TEST(Tensor, Bf16RoundsToNearestEven) {
  // 1 + 2^-8 lies exactly between two bf16 values (1 and 1 + 2^-7): ties go to the even one, 1.
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.0f + 1.0f / 256)), 1.0f);
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.0f + 3.0f / 256)), 1.0f + 4.0f / 256);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::nanf("")))));
}

TEST(Tensor, ViewsShareStorage) {
  Tensor x = Tensor::from({0, 1, 2, 3, 4, 5}, {3, 2});
  Tensor v = x.alias({2, 3});
  EXPECT_TRUE(v.shares_storage_with(x));
  Tensor rows = x.alias_rows(1, 3);
  EXPECT_EQ(rows.shape(), (Shape{2, 2}));
  EXPECT_EQ(rows.at(0), 2.0);
  rows.data<float>()[0] = 42;
  EXPECT_EQ(x.at(2), 42.0);
  Tensor c = x.clone();
  c.data<float>()[0] = -1;
  EXPECT_EQ(x.at(0), 0.0);
}

TEST(Tensor, BadAccessThrowsTypedErrors) {
  Tensor x = Tensor::zeros({2, 3});
  EXPECT_THROW(x.data<double>(), DTypeError);
  EXPECT_THROW(x.alias({4, 2}), ShapeError);
  EXPECT_THROW(x.size(2), ValueError);
  EXPECT_THROW(x.item(), ShapeError);
  EXPECT_THROW(Tensor::empty({-1}), ShapeError);
  EXPECT_THROW(Tensor::from({1, 2}, {3}), ShapeError);
  EXPECT_THROW(Tensor::zeros({2}, DType::i32).set_requires_grad(true), DTypeError);
  try {
    x.alias({4, 2});
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("[2, 3]"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("[4, 2]"), std::string::npos);
  }
  Tensor undefined;
  EXPECT_THROW(undefined.shape(), Error);
}

// Known-answer vectors of Philox4x32-10 from the Random123 distribution (kat_vectors).
TEST(Philox, KnownAnswers) {
  Philox4 r = philox4x32_10({{0, 0, 0, 0}}, 0, 0);
  EXPECT_EQ(r.v[0], 0x6627e8d5u);
  EXPECT_EQ(r.v[1], 0xe169c58du);
  EXPECT_EQ(r.v[2], 0xbc57ac4cu);
  EXPECT_EQ(r.v[3], 0x9b00dbd8u);
  Philox4 m = philox4x32_10({{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}}, 0xffffffffu, 0xffffffffu);
  EXPECT_EQ(m.v[0], 0x408f276du);
  EXPECT_EQ(m.v[1], 0x41c83b0eu);
  EXPECT_EQ(m.v[2], 0xa20bc7c6u);
  EXPECT_EQ(m.v[3], 0x6d5451fdu);
  Philox4 p = philox4x32_10({{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}}, 0xa4093822u, 0x299f31d0u);
  EXPECT_EQ(p.v[0], 0xd16cfe09u);
  EXPECT_EQ(p.v[1], 0x94fdccebu);
  EXPECT_EQ(p.v[2], 0x5001e420u);
  EXPECT_EQ(p.v[3], 0x24126ea1u);
}

TEST(Generator, SameSeedSameNumbersAndStateRestores) {
  Generator a(7), b(7), c(8);
  Tensor ta = Tensor::empty({1001}), tb = Tensor::empty({1001}), tc = Tensor::empty({1001});
  a.normal_(ta);
  b.normal_(tb);
  c.normal_(tc);
  EXPECT_EQ(ta.to_vector(), tb.to_vector());
  EXPECT_NE(ta.to_vector(), tc.to_vector());
  // Saving and restoring the state continues the same sequence.
  GeneratorState saved = a.state();
  Tensor next1 = Tensor::empty({10}), next2 = Tensor::empty({10});
  a.uniform_(next1);
  a.set_state(saved);
  a.uniform_(next2);
  EXPECT_EQ(next1.to_vector(), next2.to_vector());
  // A draw never reuses words of the previous one.
  EXPECT_EQ(saved.offset % 4, 0u);
}

TEST(Generator, MomentsAreRight) {
  Generator g(3);
  Tensor n = Tensor::empty({200000}, DType::f64);
  g.normal_(n, 1.0, 2.0);
  double mean = 0, var = 0;
  auto v = n.to_vector();
  for (double x : v) mean += x;
  mean /= v.size();
  for (double x : v) var += (x - mean) * (x - mean);
  var /= v.size();
  EXPECT_NEAR(mean, 1.0, 0.02);
  EXPECT_NEAR(var, 4.0, 0.05);
  Tensor u = Tensor::empty({100000}, DType::f32);
  g.uniform_(u, -1, 1);
  for (double x : u.to_vector()) {
    EXPECT_GE(x, -1.0);
    EXPECT_LT(x, 1.0);
  }
  Tensor r = Tensor::empty({1000}, DType::i32);
  g.randint_(r, 7);
  for (double x : r.to_vector()) {
    EXPECT_GE(x, 0.0);
    EXPECT_LT(x, 7.0);
  }
}

}  // namespace gattn
