// CUDA softmax, layer_norm, cross_entropy, embedding, masked_fill and dropout against the CPU ops,
// forward and backward, on odd sizes; bad indices and targets are clear errors; dropout draws the
// CPU's mask bit for bit. Skips without a device.
#include <gtest/gtest.h>

#include <limits>

#include "core/tensor/random.h"
#include "cuda_test_util.h"
#include "ops/nn_functional.h"

namespace gattn {
namespace {

using test::cuda_matches_cpu;
using test::frand;

Tensor ints(const std::vector<std::int32_t>& v, const Shape& s) { return Tensor::from_ints(v, s); }

TEST(CudaNn, SoftmaxAndLogSoftmaxMatchCpu) {
  GATTN_REQUIRE_DEVICE();
  for (const Shape& s : {Shape{1}, Shape{7}, Shape{3, 33}, Shape{5, 1000}, Shape{2, 4097}, Shape{300, 64}}) {
    const Tensor x = frand(s, 60, -5.0, 5.0);
    EXPECT_TRUE(cuda_matches_cpu([](const auto& in) { return ops::softmax(in[0]); }, {x})) << shape_str(s);
    EXPECT_TRUE(cuda_matches_cpu([](const auto& in) { return ops::log_softmax(in[0]); }, {x})) << shape_str(s);
  }
}

TEST(CudaNn, SoftmaxOfAFullyMaskedRowIsZerosNotNaN) {
  GATTN_REQUIRE_DEVICE();
  Tensor x = frand({2, 5}, 61);
  for (int j = 0; j < 5; ++j) x.data<float>()[j] = -std::numeric_limits<float>::infinity();
  const std::vector<double> y = ops::softmax(x.to(Device::cuda)).to_vector();
  const std::vector<double> ly = ops::log_softmax(x.to(Device::cuda)).to_vector();
  for (int j = 0; j < 5; ++j) {
    EXPECT_EQ(y[j], 0.0);
    EXPECT_EQ(ly[j], -std::numeric_limits<double>::infinity());  // log of those zeros, not NaN
  }
  // The unmasked row as on the CPU (all_close cannot compare the −inf row: −inf − −inf is NaN).
  EXPECT_TRUE(test::all_close(ops::softmax(x.to(Device::cuda)), ops::softmax(x)));
  EXPECT_TRUE(
      test::all_close(ops::log_softmax(x.to(Device::cuda)).alias_rows(1, 2), ops::log_softmax(x).alias_rows(1, 2)));
}

TEST(CudaNn, LayerNormMatchesCpuWithAndWithoutAffine) {
  GATTN_REQUIRE_DEVICE();
  for (const Shape& s : {Shape{1, 1}, Shape{7}, Shape{3, 33}, Shape{2, 5, 768}, Shape{1000, 7}, Shape{3, 4097}}) {
    const std::int64_t C = s.back();
    const Tensor x = frand(s, 62, -3.0, 3.0), w = frand({C}, 63, 0.5, 1.5), b = frand({C}, 64);
    // dx has cancellations (ĝ − mean ĝ − …): an absolute floor as well as the relative bound.
    const test::Tolerance tol{2e-5, 1e-5};
    EXPECT_TRUE(
        cuda_matches_cpu([](const auto& in) { return ops::layer_norm(in[0], in[1], in[2]); }, {x, w, b}, tol, tol))
        << shape_str(s);
    EXPECT_TRUE(
        cuda_matches_cpu([](const auto& in) { return ops::layer_norm(in[0], Tensor(), Tensor()); }, {x}, tol, tol))
        << shape_str(s) << " without affine";
  }
}

// No rows: the weight and bias gradients are empty sums, zeros as on the CPU (the kernel used to
// return early and leave them uninitialised).
TEST(CudaNn, LayerNormOfNoRowsGivesZeroParameterGradients) {
  GATTN_REQUIRE_DEVICE();
  const Tensor x = Tensor::zeros({0, 24}, DType::f32);
  const Tensor w = frand({24}, 70, 0.5, 1.5), b = frand({24}, 71, -0.5, 0.5);
  EXPECT_TRUE(cuda_matches_cpu([](const auto& in) { return ops::layer_norm(in[0], in[1], in[2]); }, {x, w, b}));
}

TEST(CudaNn, CrossEntropyMatchesCpuWithIgnoredRows) {
  GATTN_REQUIRE_DEVICE();
  for (const auto& [rows, V] :
       std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 1}, {7, 33}, {64, 1000}, {3, 50257}}) {
    const Tensor logits = frand({rows, V}, 65, -4.0, 4.0);
    std::vector<std::int32_t> t(static_cast<std::size_t>(rows));
    for (std::int64_t r = 0; r < rows; ++r) t[static_cast<std::size_t>(r)] = static_cast<std::int32_t>((r * 7919) % V);
    if (rows > 2) t[1] = -1;  // ignored
    const Tensor targets = ints(t, {rows});
    EXPECT_TRUE(cuda_matches_cpu([](const auto& in) { return ops::cross_entropy(in[0], in[1]); }, {logits, targets}))
        << rows << "x" << V;
  }
}

TEST(CudaNn, CrossEntropyWithEveryRowIgnoredIsZero) {
  GATTN_REQUIRE_DEVICE();
  const Tensor logits = frand({3, 5}, 66).to(Device::cuda);
  EXPECT_EQ(ops::cross_entropy(logits, ints({-1, -1, -1}, {3}).to(Device::cuda)).item(), 0.0);
}

TEST(CudaNn, BadTargetsAndIndicesAreClearErrors) {
  GATTN_REQUIRE_DEVICE();
  const Tensor logits = frand({3, 5}, 67).to(Device::cuda);
  const std::string ce = test::error_of([&] { ops::cross_entropy(logits, ints({0, 5, 9}, {3}).to(Device::cuda)); });
  EXPECT_NE(ce.find("target 5 (at row 1) is out of range for V = 5"), std::string::npos) << ce;
  const Tensor w = frand({4, 3}, 68).to(Device::cuda);
  const std::string emb = test::error_of([&] { ops::embedding(w, ints({0, 3, -2}, {3}).to(Device::cuda)); });
  EXPECT_NE(emb.find("index -2 (at flat position 2) is out of range for V = 4"), std::string::npos) << emb;
  const std::string mixed = test::error_of([&] { ops::embedding(w, ints({0}, {1})); });
  EXPECT_NE(mixed.find("embedding: operands on different devices"), std::string::npos) << mixed;
}

TEST(CudaNn, EmbeddingMatchesCpuWithRepeatedIndicesExactly) {
  GATTN_REQUIRE_DEVICE();
  for (const auto& [V, C, n] : std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>>{
           {1, 1, 1}, {7, 33, 20}, {1000, 768, 4097}, {50, 2100, 300}}) {
    const Tensor w = frand({V, C}, 69);
    std::vector<std::int32_t> idx(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) idx[static_cast<std::size_t>(i)] = static_cast<std::int32_t>((i * i + 3) % V);
    // Both sum each row's gradients in index order from 0: the same bits.
    EXPECT_TRUE(cuda_matches_cpu([](const auto& in) { return ops::embedding(in[0], in[1]); }, {w, ints(idx, {n})},
                                 {0, 0}, {0, 0}))
        << V << "x" << C << " n=" << n;
  }
}

TEST(CudaNn, MaskedFillMatchesCpu) {
  GATTN_REQUIRE_DEVICE();
  const Tensor x = frand({3, 7, 33}, 70);
  std::vector<std::int32_t> m(7 * 33);
  for (std::size_t i = 0; i < m.size(); ++i) m[i] = (i % 3) == 0;
  EXPECT_TRUE(
      cuda_matches_cpu([](const auto& in) { return ops::masked_fill(in[0], in[1], -1e4); }, {x, ints(m, {7, 33})}));
  std::vector<std::int32_t> col = {1, 0, 0, 1, 0, 1, 0};
  EXPECT_TRUE(
      cuda_matches_cpu([](const auto& in) { return ops::masked_fill(in[0], in[1], 2.5); }, {x, ints(col, {7, 1})}));
}

TEST(CudaNn, DropoutDrawsTheCpuMaskBitForBit) {
  GATTN_REQUIRE_DEVICE();
  for (std::int64_t n : {1, 7, 33, 1000, 4097}) {
    const Tensor x = frand({n}, 71);
    Generator cpu_gen(1234, 5), gpu_gen(1234, 5);
    cpu_gen.reserve(3);  // a draw that does not start at offset 0: the offsets must line up too
    gpu_gen.reserve(3);
    Tensor xc = x.clone().set_requires_grad(true), xg = x.to(Device::cuda).set_requires_grad(true);
    Tensor yc = ops::dropout(xc, 0.3, cpu_gen), yg = ops::dropout(xg, 0.3, gpu_gen);
    EXPECT_TRUE(test::same_bits(yg, yc)) << n;
    const Tensor go = frand({n}, 72);
    yc.backward(go);
    yg.backward(go.to(Device::cuda));
    EXPECT_TRUE(test::same_bits(xg.grad(), xc.grad())) << n;
    EXPECT_EQ(cpu_gen.state().offset, gpu_gen.state().offset);
  }
}

}  // namespace
}  // namespace gattn
