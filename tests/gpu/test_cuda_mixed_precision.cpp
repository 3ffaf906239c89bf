// bf16 mixed precision (ops/autocast.h) on the GPU: the device conversion kernel rounds exactly as
// the host does; linear and matmul inside an AutocastScope compute the product of the bf16-rounded
// operands with f32 accumulation, keep f32 results and return f32 gradients; and a GPT trained 20
// AdamW steps in bf16 tracks the same model trained in fp32 and repeats itself bit for bit.
// Skips without a device.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "cuda_test_util.h"
#include "framework/optim/adamw.h"
#include "models/gpt.h"
#include "ops/autocast.h"
#include "ops/matmul.h"
#include "unit/model_test_util.h"

namespace gattn {
namespace {

using test::frand;

// The value a bf16 operand carries: x rounded to bf16, as f64 for the CPU reference.
Tensor bf16_value(const Tensor& x) { return x.to(Device::cpu).to(DType::bf16).to(DType::f64); }

TEST(CudaMixedPrecision, DeviceConversionRoundsLikeTheHost) {
  GATTN_REQUIRE_DEVICE();
  Tensor x = frand({1000}, 3, -50.0, 50.0);
  // Ties, tiny and huge values, infinities and NaN.
  const float specials[] = {1.0f + 1.0f / 256,
                            1.0f + 3.0f / 256,
                            1e-40f,
                            -3e38f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            0.0f,
                            -0.0f};
  for (std::size_t i = 0; i < std::size(specials); ++i) x.data<float>()[i] = specials[i];
  const Tensor gpu = x.to(Device::cuda);
  EXPECT_TRUE(test::same_bits(gpu.to(DType::bf16), x.to(DType::bf16)));
  EXPECT_TRUE(test::same_bits(gpu.to(DType::bf16).to(DType::f32), x.to(DType::bf16).to(DType::f32)));
  EXPECT_TRUE(test::same_bits(gpu.to(DType::f64), x.to(DType::f64)));
  const Tensor ints = Tensor::from_ints({-7, 0, 5, 1 << 20}, {4});
  EXPECT_TRUE(test::same_bits(ints.to(Device::cuda).to(DType::f32), ints.to(DType::f32)));
  // Across devices in one call: host f32 into a device bf16 tensor.
  Tensor dst = Tensor::empty({1000}, DType::bf16, Device::cuda);
  dst.copy_from(x);
  EXPECT_TRUE(test::same_bits(dst, x.to(DType::bf16)));
}

TEST(CudaMixedPrecision, LinearUnderAutocastIsTheProductOfBf16Operands) {
  GATTN_REQUIRE_DEVICE();
  const Tensor x = frand({5, 37, 70}, 11), w = frand({29, 70}, 12), b = frand({29}, 13), g = frand({5, 37, 29}, 14);
  Tensor xg = x.to(Device::cuda).detach().set_requires_grad(true),
         wg = w.to(Device::cuda).detach().set_requires_grad(true);
  Tensor bg = b.to(Device::cuda).detach().set_requires_grad(true);
  Tensor y;
  {
    ops::AutocastScope bf16(ops::ComputePrecision::bf16);
    y = ops::linear(xg, wg, bg);
    y.backward(g.to(Device::cuda));
  }
  ASSERT_EQ(y.dtype(), DType::f32);
  ASSERT_EQ(xg.grad().dtype(), DType::f32);
  ASSERT_EQ(wg.grad().dtype(), DType::f32);
  // The reference: the same rounded operands (and rounded output gradient), multiplied in f64.
  // Products of two bf16 values are exact in f32, so only the f32 accumulation differs: at most
  // ~K·2⁻²⁴ of Σ|terms| (K ≤ 185 here), far inside 1e-5 + 1e-5 relative.
  const Tensor xr = bf16_value(x).set_requires_grad(true), wr = bf16_value(w).set_requires_grad(true);
  const Tensor br = b.to(DType::f64).set_requires_grad(true);
  Tensor yr = ops::linear(xr, wr, br);
  EXPECT_TRUE(test::all_close(y, yr, 1e-5, 1e-5));
  // Backward rounds the output gradient to bf16 for dx and dW; db sums the f32 gradient.
  yr.backward(bf16_value(g));
  EXPECT_TRUE(test::all_close(xg.grad(), xr.grad(), 1e-5, 1e-5));
  EXPECT_TRUE(test::all_close(wg.grad(), wr.grad(), 1e-5, 1e-5));
  Tensor br2 = b.to(DType::f64).set_requires_grad(true);
  ops::linear(xr.detach(), wr.detach(), br2).backward(g.to(DType::f64));
  EXPECT_TRUE(test::all_close(bg.grad(), br2.grad(), 1e-5, 1e-5));
}

TEST(CudaMixedPrecision, BatchedMatmulUnderAutocastIsTheProductOfBf16Operands) {
  GATTN_REQUIRE_DEVICE();
  const Tensor a = frand({3, 40, 17}, 21), bm = frand({3, 9, 40}, 22), g = frand({3, 17, 9}, 23);
  Tensor ag = a.to(Device::cuda).detach().set_requires_grad(true),
         bg = bm.to(Device::cuda).detach().set_requires_grad(true);
  Tensor y;
  {
    ops::AutocastScope bf16(ops::ComputePrecision::bf16);
    y = ops::matmul(ag, bg, /*trans_a=*/true, /*trans_b=*/true);
    y.backward(g.to(Device::cuda));
  }
  ASSERT_EQ(y.dtype(), DType::f32);
  const Tensor ar = bf16_value(a).set_requires_grad(true), brr = bf16_value(bm).set_requires_grad(true);
  Tensor yr = ops::matmul(ar, brr, true, true);
  EXPECT_TRUE(test::all_close(y, yr, 1e-5, 1e-5));
  yr.backward(bf16_value(g));
  EXPECT_TRUE(test::all_close(ag.grad(), ar.grad(), 1e-5, 1e-5));
  EXPECT_TRUE(test::all_close(bg.grad(), brr.grad(), 1e-5, 1e-5));
}

// Losses of 20 AdamW steps of a small GPT on the GPU in `precision`.
std::vector<double> train_gpt(std::string kind, ops::ComputePrecision precision) {
  models::ModelConfig c = test::tiny_config(kind, DType::f32);
  c.vocab_size = 23;
  c.block_size = 33;
  c.n_embd = 64;
  c.n_head = 2;  // head dim 32
  models::GPT model(c, 5);
  model.to_(Device::cuda);
  optim::AdamWOptions o;
  o.lr = 3e-3;
  o.schedule.kind = "constant";
  optim::AdamW opt(model.named_parameters(), o);
  std::vector<double> losses;
  for (std::int64_t step = 0; step < 20; ++step) {
    const Tensor x = test::tokens(4, 33, 23, 100 + 2 * static_cast<std::uint64_t>(step));
    // A learnable target: the next token is a fixed function of the current one.
    Tensor y = x.clone();
    for (std::int64_t i = 0; i < y.numel(); ++i) y.data<std::int32_t>()[i] = (x.data<std::int32_t>()[i] * 7 + 2) % 23;
    ops::AutocastScope scope(precision);
    const Tensor loss = model.forward(x.to(Device::cuda), y.to(Device::cuda)).loss;
    loss.backward();
    opt.clip_grad_norm();
    opt.step(step);
    opt.zero_grad();
    losses.push_back(loss.item());
  }
  return losses;
}

TEST(CudaMixedPrecision, Bf16TrainingTracksFp32AndRepeatsBitForBit) {
  GATTN_REQUIRE_DEVICE();
  for (std::string kind : {"output", "forget"}) {
    SCOPED_TRACE(std::string(kind));
    const std::vector<double> fp32 = train_gpt(kind, ops::ComputePrecision::fp32);
    const std::vector<double> bf16 = train_gpt(kind, ops::ComputePrecision::bf16);
    const std::vector<double> again = train_gpt(kind, ops::ComputePrecision::bf16);
    EXPECT_LT(bf16.back(), 0.7 * bf16.front());  // it learns
    for (std::size_t i = 0; i < fp32.size(); ++i) {
      // bf16 operands carry 8 significant bits (2⁻⁹ relative rounding); over 20 steps the two runs
      // drift apart by a few percent of the loss at most, while a wrong gradient would not learn.
      EXPECT_NEAR(bf16[i], fp32[i], 0.05 * fp32[i]) << "step " << i;
      EXPECT_EQ(again[i], bf16[i]) << "step " << i << ": bf16 training is not deterministic";
    }
  }
}

}  // namespace
}  // namespace gattn
