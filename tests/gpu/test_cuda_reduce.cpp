// CUDA reductions and scans against the CPU ops: sums and means over every axis pattern (including
// sizes far beyond one block and non-multiples of it), amax_last, cumsum; forward and backward, and
// bit-identical results on repeated runs. Skips without a device.
#include <gtest/gtest.h>

#include "cuda_test_util.h"
#include "ops/attention/attention.h"
#include "ops/reduce.h"
#include "ops/scan.h"

namespace gattn {
namespace {

using test::cuda_matches_cpu;
using test::frand;

TEST(CudaReduce, SumAndMeanOverAxesMatchCpu) {
  GATTN_REQUIRE_DEVICE();
  const std::vector<std::pair<Shape, std::vector<std::int64_t>>> cases = {
      {{1}, {0}},          {{7}, {0}},          {{4097}, {0}},    {{33, 1000}, {1}},
      {{33, 1000}, {0}},   {{3, 7, 5}, {0, 2}}, {{3, 7, 5}, {1}}, {{2, 1, 4097}, {0, 1}},
      {{5, 4, 3, 2}, {3}}, {{1 << 20}, {0}},    {{257, 3}, {0}},  {{6, 5, 4}, {-1, 0}}};
  std::uint64_t seed = 40;
  for (const auto& [shape, axes] : cases) {
    const Tensor x = frand(shape, ++seed);
    for (bool keep : {false, true}) {
      EXPECT_TRUE(cuda_matches_cpu([axes = axes, keep](const auto& in) { return ops::sum(in[0], axes, keep); }, {x}))
          << "sum " << shape_str(shape) << " keepdim " << keep;
      EXPECT_TRUE(cuda_matches_cpu([axes = axes, keep](const auto& in) { return ops::mean(in[0], axes, keep); }, {x}))
          << "mean " << shape_str(shape) << " keepdim " << keep;
    }
  }
}

TEST(CudaReduce, FullSumAndMeanMatchCpu) {
  GATTN_REQUIRE_DEVICE();
  for (std::int64_t n : {1, 7, 33, 1000, 4097, 3000001}) {
    const Tensor x = frand({n}, 50);
    EXPECT_TRUE(cuda_matches_cpu([](const auto& in) { return ops::sum(in[0]); }, {x})) << n;
    EXPECT_TRUE(cuda_matches_cpu([](const auto& in) { return ops::mean(in[0]); }, {x})) << n;
  }
}

TEST(CudaReduce, SumIsBitIdenticalRunToRun) {
  GATTN_REQUIRE_DEVICE();
  const Tensor x = frand({4099, 771}, 51).to(Device::cuda);
  for (const std::vector<std::int64_t>& axes : {std::vector<std::int64_t>{0}, {1}, {0, 1}}) {
    const Tensor first = ops::sum(x, axes);
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(test::same_bits(ops::sum(x, axes), first));
  }
}

TEST(CudaReduce, AmaxLastMatchesCpuAndKeepsNaN) {
  GATTN_REQUIRE_DEVICE();
  for (const Shape& s : {Shape{1}, Shape{7, 33}, Shape{3, 4097}, Shape{1000, 1}}) {
    const Tensor x = frand(s, 52);
    EXPECT_TRUE(test::all_close(ops::amax_last(x.to(Device::cuda)), ops::amax_last(x), 0, 0)) << shape_str(s);
  }
  Tensor x = frand({2, 5}, 53);
  x.data<float>()[7] = std::nanf("");
  const std::vector<double> m = ops::amax_last(x.to(Device::cuda)).to_vector();
  EXPECT_FALSE(std::isnan(m[0]));
  EXPECT_TRUE(std::isnan(m[1]));
}

// The gate statistics' moments reduced on the device (a few partial sums reach the host) against
// the CPU's loop over the values: counts exactly, sums to double rounding.
TEST(CudaReduce, GateMomentsMatchCpu) {
  GATTN_REQUIRE_DEVICE();
  for (const Shape& s : {Shape{1}, Shape{3, 7}, Shape{4, 2, 1000}, Shape{70001}}) {
    const Tensor g = frand(s, 90, 0.0, 1.0);
    const ops::GateMoments cpu = ops::gate_moments(g), gpu = ops::gate_moments(g.to(Device::cuda));
    EXPECT_EQ(gpu.count, cpu.count) << shape_str(s);
    EXPECT_EQ(gpu.below_0_1, cpu.below_0_1) << shape_str(s);
    EXPECT_EQ(gpu.above_0_9, cpu.above_0_9) << shape_str(s);
    EXPECT_NEAR(gpu.sum, cpu.sum, 1e-9 * cpu.count) << shape_str(s);
    EXPECT_NEAR(gpu.sum_sq, cpu.sum_sq, 1e-9 * cpu.count) << shape_str(s);
  }
}

// Tensor::fill on the device is a kernel now (it was staged through the host): every dtype, with
// the host's conversion (bf16 rounded to nearest even, i32 truncated).
TEST(CudaReduce, FillOnTheDeviceConvertsLikeTheHost) {
  GATTN_REQUIRE_DEVICE();
  for (DType dtype : {DType::f32, DType::f64, DType::i32, DType::bf16}) {
    Tensor host = Tensor::zeros({1027}, dtype), device = Tensor::zeros({1027}, dtype, Device::cuda);
    host.fill(-2.71828);
    device.fill(-2.71828);
    EXPECT_TRUE(test::same_bits(device, host)) << dtype_name(dtype);
  }
}

TEST(CudaScan, CumsumMatchesCpuOnEveryAxis) {
  GATTN_REQUIRE_DEVICE();
  for (const Shape& s : {Shape{1}, Shape{4097}, Shape{7, 33}, Shape{3, 1000, 5}}) {
    const Tensor x = frand(s, 54);
    for (std::int64_t axis = 0; axis < static_cast<std::int64_t>(s.size()); ++axis)
      EXPECT_TRUE(cuda_matches_cpu([axis](const auto& in) { return ops::cumsum(in[0], axis); }, {x}, {0, 0}, {0, 0}))
          << shape_str(s) << " axis " << axis << " (same double running sums as the CPU: exact)";
  }
}

}  // namespace
}  // namespace gattn
