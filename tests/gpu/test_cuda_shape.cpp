// CUDA shape ops against the CPU ops: transpose, permute, slice, split, concat, reshape views;
// they only move elements, so the results and gradients are exact. Skips without a device.
#include <gtest/gtest.h>

#include <cstdlib>

#include "cuda_test_util.h"
#include "ops/elementwise.h"
#include "ops/shape.h"

namespace gattn {
namespace {

using test::cuda_matches_cpu;
using test::frand;

const test::Tolerance kExact{0, 0};

TEST(CudaShape, TransposeAndPermuteMatchCpu) {
  GATTN_REQUIRE_DEVICE();
  const Tensor x = frand({2, 7, 3, 33}, 100);
  for (const auto& [d0, d1] : std::vector<std::pair<int, int>>{{0, 1}, {1, 2}, {0, 3}, {-1, -2}, {2, 2}})
    EXPECT_TRUE(cuda_matches_cpu([d0 = d0, d1 = d1](const auto& in) { return ops::transpose(in[0], d0, d1); }, {x},
                                 kExact, kExact))
        << d0 << "," << d1;
  for (const std::vector<std::int64_t>& p :
       {std::vector<std::int64_t>{0, 2, 1, 3}, {3, 1, 0, 2}, {1, 2, 3, 0}, {0, 1, 2, 3}})
    EXPECT_TRUE(cuda_matches_cpu([p](const auto& in) { return ops::permute(in[0], p); }, {x}, kExact, kExact));
}

TEST(CudaShape, SliceSplitConcatMatchCpu) {
  GATTN_REQUIRE_DEVICE();
  const Tensor x = frand({5, 1000, 3}, 101), y = frand({5, 7, 3}, 102);
  EXPECT_TRUE(cuda_matches_cpu([](const auto& in) { return ops::slice(in[0], 1, 33, 1000); }, {x}, kExact, kExact));
  EXPECT_TRUE(cuda_matches_cpu([](const auto& in) { return ops::slice(in[0], 0, 1, 2); }, {x}, kExact, kExact));
  EXPECT_TRUE(cuda_matches_cpu(
      [](const auto& in) {
        const std::vector<Tensor> parts = ops::split(in[0], {1, 998, 1}, 1);
        return ops::concat({parts[2] * 2.0, parts[0], parts[1]}, 1);
      },
      {x}, kExact, kExact));
  EXPECT_TRUE(cuda_matches_cpu(
      [](const auto& in) {
        return ops::concat({in[0], in[1], in[0]}, 1);
      },
      {x, y}, kExact, kExact));
  EXPECT_TRUE(cuda_matches_cpu(
      [](const auto& in) {
        return ops::reshape(ops::unsqueeze(in[0], 0), {-1, 3});
      },
      {y}, kExact, kExact));
}

// Rows wider than the copy engine's maximum pitch take the copy kernel instead of cudaMemcpy2D.
// Real pitches need rows past 2 GiB; the emulation build lowers its reported limit to 64 bytes
// (GATTN_EMU_MAX_PITCH), which a real device ignores, so there this repeats the 2-D copy path.
TEST(CudaShape, AxisCopiesWiderThanTheMaximumPitchStillMatchCpu) {
  GATTN_REQUIRE_DEVICE();
  setenv("GATTN_EMU_MAX_PITCH", "64", 1);
  const Tensor x = frand({4, 40, 3}, 104), y = frand({4, 9, 3}, 105);
  EXPECT_TRUE(cuda_matches_cpu([](const auto& in) { return ops::slice(in[0], 1, 5, 38); }, {x}, kExact, kExact));
  EXPECT_TRUE(cuda_matches_cpu([](const auto& in) { return ops::concat({in[0], in[1]}, 1); }, {x, y}, kExact, kExact));
  unsetenv("GATTN_EMU_MAX_PITCH");
}

TEST(CudaShape, ConcatAcrossDevicesIsAClearError) {
  GATTN_REQUIRE_DEVICE();
  const Tensor c = frand({2, 3}, 103);
  const std::string msg = test::error_of([&] { ops::concat({c, c.to(Device::cuda)}, 0); });
  EXPECT_NE(msg.find("concat: operands on different devices"), std::string::npos) << msg;
}

}  // namespace
}  // namespace gattn
