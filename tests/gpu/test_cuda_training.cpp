// A small language model trained for 20 SGD steps on the CPU and on the GPU from the same weights
// and batches: the GPU losses track the CPU's, and a second GPU run repeats its losses and weights
// bit for bit (deterministic mode: no atomics whose order varies). The model uses the ops a GPT
// block is made of (embedding, layer_norm, linear, gelu, softmax attention via matmul, masked_fill,
// dropout, cross_entropy). Skips without a device.
#include <gtest/gtest.h>

#include "core/tensor/random.h"
#include "cuda_test_util.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/nn_functional.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "ops/unary.h"
#ifdef GATTN_WITH_CUDA
#include "ops/cuda/gemm.h"
#endif

namespace gattn {
namespace {

constexpr std::int64_t kV = 37, kC = 16, kB = 3, kT = 9, kSteps = 20;

struct TinyLm {
  std::vector<Tensor> params;  // wte, wpe, ln_w, ln_b, wq, wk, wv, w1, b1, w2, b2, head

  static TinyLm init(std::uint64_t seed) {
    const std::vector<Shape> shapes = {{kV, kC}, {kT, kC},     {kC},     {kC},         {kC, kC}, {kC, kC},
                                       {kC, kC}, {4 * kC, kC}, {4 * kC}, {kC, 4 * kC}, {kC},     {kV, kC}};
    TinyLm m;
    for (const Shape& s : shapes) m.params.push_back(test::randn(s, ++seed, 0.2, DType::f32));
    m.params[2].fill(1.0);
    return m;
  }
  TinyLm to(Device d) const {
    TinyLm m;
    for (const Tensor& p : params) m.params.push_back(p.to(d).clone().set_requires_grad(true));
    return m;
  }

  Tensor loss(const Tensor& tokens, const Tensor& targets, const Tensor& causal, Generator& gen) const {
    const auto& p = params;
    Tensor pos = Tensor::arange(kT).to(tokens.device());
    Tensor x = ops::embedding(p[0], tokens) + ops::embedding(p[1], pos);  // [B, T, C]
    Tensor h = ops::layer_norm(x, p[2], p[3]);
    Tensor q = ops::linear(h, p[4]), k = ops::linear(h, p[5]), v = ops::linear(h, p[6]);
    Tensor scores = ops::matmul(q, k, false, true) * 0.25;  // [B, T, T]
    Tensor att = ops::softmax(ops::masked_fill(scores, causal, -1e9));
    x = x + ops::matmul(ops::dropout(att, 0.1, gen), v);
    Tensor f = ops::linear(ops::gelu(ops::linear(x, p[7], p[8])), p[9], p[10]);
    x = x + f;
    Tensor logits = ops::linear(x, p[11]);
    return ops::cross_entropy(ops::reshape(logits, {kB * kT, kV}), ops::reshape(targets, {kB * kT}));
  }

  void sgd(double lr) {
    for (Tensor& p : params) {
      Tensor g = p.grad();
      ops::axpy_(p, -lr, g);
      p.zero_grad();
    }
  }
};

// Losses of kSteps steps on `device`; the final weights are returned through `final_params`.
std::vector<double> train(Device device, std::vector<Tensor>* final_params) {
  TinyLm model = TinyLm::init(500).to(device);
  std::vector<std::int32_t> mask(kT * kT);
  for (std::int64_t i = 0; i < kT; ++i)
    for (std::int64_t j = 0; j < kT; ++j) mask[static_cast<std::size_t>(i * kT + j)] = j > i;
  const Tensor causal = Tensor::from_ints(mask, {kT, kT}).to(device);
  Generator data(7), dropout_gen(11);
  std::vector<double> losses;
  for (std::int64_t step = 0; step < kSteps; ++step) {
    Tensor tokens = Tensor::empty({kB, kT}, DType::i32), targets = Tensor::empty({kB, kT}, DType::i32);
    data.randint_(tokens, kV);
    // A learnable task (each token's target is a fixed function of it), so the loss visibly falls.
    for (std::int64_t i = 0; i < kB * kT; ++i)
      targets.data<std::int32_t>()[i] = static_cast<std::int32_t>((tokens.data<std::int32_t>()[i] * 5 + 3) % kV);
    Tensor loss = model.loss(tokens.to(device), targets.to(device), causal, dropout_gen);
    loss.backward();
    model.sgd(0.3);
    losses.push_back(loss.item());
  }
  if (final_params) *final_params = model.params;
  return losses;
}

TEST(CudaTraining, TwentyStepsTrackTheCpuRunAndRepeatBitForBit) {
  GATTN_REQUIRE_DEVICE();
#ifdef GATTN_WITH_CUDA
  const bool tf32 = cuda::tf32_enabled();
  cuda::set_tf32_enabled(false);  // exact f32 GEMMs: the two runs differ only in summation order
#endif
  std::vector<Tensor> cpu_w, gpu_w, gpu_w2;
  const std::vector<double> cpu = train(Device::cpu, &cpu_w);
  const std::vector<double> gpu = train(Device::cuda, &gpu_w);
  const std::vector<double> gpu2 = train(Device::cuda, &gpu_w2);
#ifdef GATTN_WITH_CUDA
  cuda::set_tf32_enabled(tf32);
#endif
  ASSERT_EQ(cpu.size(), static_cast<std::size_t>(kSteps));
  EXPECT_LT(cpu.back(), cpu.front());  // it trains
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    // Rounding differences compound over 20 steps; 1e-4 relative still catches a wrong gradient.
    EXPECT_NEAR(gpu[i], cpu[i], 1e-4 * std::abs(cpu[i])) << "step " << i;
    EXPECT_EQ(gpu2[i], gpu[i]) << "step " << i << ": the GPU run is not deterministic";
  }
  for (std::size_t k = 0; k < gpu_w.size(); ++k) {
    EXPECT_TRUE(test::same_bits(gpu_w2[k], gpu_w[k])) << "parameter " << k;
    EXPECT_TRUE(test::all_close(gpu_w[k], cpu_w[k], 1e-4, 1e-3)) << "parameter " << k;
  }
}

}  // namespace
}  // namespace gattn
