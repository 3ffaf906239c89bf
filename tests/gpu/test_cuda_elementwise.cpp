// CUDA elementwise ops against the CPU ops: broadcast arithmetic, scalar ops, in-place updates,
// sum_to and every unary function, forward and backward, on odd sizes. Skips without a device.
#include <gtest/gtest.h>

#include "cuda_test_util.h"
#include "ops/elementwise.h"
#include "ops/unary.h"

namespace gattn {
namespace {

using test::cuda_matches_cpu;
using test::frand;

const std::vector<std::int64_t> kSizes = {1, 7, 33, 1000, 4097};

TEST(CudaElementwise, BinaryOpsMatchCpuOnSameShapes) {
  GATTN_REQUIRE_DEVICE();
  for (std::int64_t n : kSizes) {
    // b kept away from 0 so div is well conditioned.
    const Tensor a = frand({n}, 1), b = frand({n}, 2, 0.5, 2.0);
    EXPECT_TRUE(cuda_matches_cpu([](const auto& in) { return in[0] + in[1]; }, {a, b})) << "add n=" << n;
    EXPECT_TRUE(cuda_matches_cpu([](const auto& in) { return in[0] - in[1]; }, {a, b})) << "sub n=" << n;
    EXPECT_TRUE(cuda_matches_cpu([](const auto& in) { return in[0] * in[1]; }, {a, b})) << "mul n=" << n;
    EXPECT_TRUE(cuda_matches_cpu([](const auto& in) { return in[0] / in[1]; }, {a, b})) << "div n=" << n;
  }
}

TEST(CudaElementwise, BroadcastOpsMatchCpuAndSumGradientsBack) {
  GATTN_REQUIRE_DEVICE();
  const std::vector<std::pair<Shape, Shape>> cases = {{{7, 33}, {33}},        {{7, 33}, {7, 1}},
                                                      {{2, 1, 5}, {3, 1}},    {{1}, {1000}},
                                                      {{3, 4097}, {1, 4097}}, {{4, 1, 3, 1}, {1, 5, 1, 2}}};
  std::uint64_t seed = 10;
  for (const auto& [sa, sb] : cases) {
    const Tensor a = frand(sa, ++seed), b = frand(sb, ++seed, 0.5, 2.0);
    const std::string label = shape_str(sa) + " with " + shape_str(sb);
    EXPECT_TRUE(cuda_matches_cpu([](const auto& in) { return in[0] + in[1]; }, {a, b})) << "add " << label;
    EXPECT_TRUE(cuda_matches_cpu([](const auto& in) { return in[0] - in[1]; }, {a, b})) << "sub " << label;
    EXPECT_TRUE(cuda_matches_cpu([](const auto& in) { return in[0] * in[1]; }, {a, b})) << "mul " << label;
    EXPECT_TRUE(cuda_matches_cpu([](const auto& in) { return in[0] / in[1]; }, {a, b})) << "div " << label;
  }
}

TEST(CudaElementwise, ScalarOpsMatchCpu) {
  GATTN_REQUIRE_DEVICE();
  for (std::int64_t n : kSizes) {
    const Tensor a = frand({n}, 3);
    EXPECT_TRUE(cuda_matches_cpu([](const auto& in) { return in[0] * 1.75; }, {a})) << n;
    EXPECT_TRUE(cuda_matches_cpu([](const auto& in) { return in[0] + -0.25; }, {a})) << n;
    EXPECT_TRUE(cuda_matches_cpu([](const auto& in) { return -in[0]; }, {a})) << n;
  }
}

TEST(CudaElementwise, InPlaceUpdatesMatchCpu) {
  GATTN_REQUIRE_DEVICE();
  for (std::int64_t n : kSizes) {
    const Tensor a = frand({3, n}, 4), b = frand({3, n}, 5), row = frand({n}, 6);
    Tensor ca = a.clone(), ga = a.to(Device::cuda);
    ops::add_(ca, row);
    ops::add_(ga, row.to(Device::cuda));
    ops::axpy_(ca, -0.5, b);
    ops::axpy_(ga, -0.5, b.to(Device::cuda));
    ops::scale_(ca, 3.0);
    ops::scale_(ga, 3.0);
    EXPECT_TRUE(test::all_close(ga, ca, 1e-5, 1e-5)) << n;
  }
}

TEST(CudaElementwise, SumToMatchesCpu) {
  GATTN_REQUIRE_DEVICE();
  const std::vector<std::pair<Shape, Shape>> cases = {{{7, 33}, {33}},     {{7, 33}, {7, 1}}, {{2, 3, 5}, {3, 1}},
                                                      {{4097, 3}, {1, 3}}, {{5, 4, 3}, {}},   {{1000}, {1}}};
  std::uint64_t seed = 20;
  for (const auto& [gs, target] : cases) {
    const Tensor g = frand(gs, ++seed);
    EXPECT_TRUE(test::all_close(ops::sum_to(g.to(Device::cuda), target), ops::sum_to(g, target), 1e-5, 1e-5))
        << shape_str(gs) << " to " << shape_str(target);
  }
}

TEST(CudaElementwise, UnaryFunctionsMatchCpuForwardAndBackward) {
  GATTN_REQUIRE_DEVICE();
  using Fn = Tensor (*)(const Tensor&);
  const std::vector<std::pair<const char*, Fn>> anywhere = {
      {"exp", ops::exp},   {"tanh", ops::tanh}, {"sigmoid", ops::sigmoid}, {"log_sigmoid", ops::log_sigmoid},
      {"relu", ops::relu}, {"gelu", ops::gelu}, {"square", ops::square},   {"heaviside", ops::heaviside}};
  const std::vector<std::pair<const char*, Fn>> positive = {{"log", ops::log}, {"sqrt", ops::sqrt}};
  for (std::int64_t n : kSizes) {
    const Tensor x = frand({n}, 30, -4.0, 4.0), xp = frand({n}, 31, 0.1, 4.0);
    for (const auto& [name, fn] : anywhere)
      EXPECT_TRUE(cuda_matches_cpu([fn = fn](const auto& in) { return fn(in[0]); }, {x})) << name << " n=" << n;
    for (const auto& [name, fn] : positive)
      EXPECT_TRUE(cuda_matches_cpu([fn = fn](const auto& in) { return fn(in[0]); }, {xp})) << name << " n=" << n;
  }
}

TEST(CudaElementwise, MixedDevicesAndF64AreClearErrors) {
  GATTN_REQUIRE_DEVICE();
  const Tensor c = frand({3}, 1), g = frand({3}, 2).to(Device::cuda);
  const std::string mixed = test::error_of([&] { ops::add(c, g); });
  EXPECT_NE(mixed.find("add: operands on different devices"), std::string::npos) << mixed;
  const std::string f64 = test::error_of([&] { ops::exp(test::rand({3}, 1).to(Device::cuda)); });
  EXPECT_NE(f64.find("exp: the CUDA kernels take f32"), std::string::npos) << f64;
}

}  // namespace
}  // namespace gattn
