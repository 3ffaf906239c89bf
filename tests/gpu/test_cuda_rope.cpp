// The CUDA rotary position embedding against the CPU op: f32 forward and backward through
// cuda_matches_cpu on head-shaped inputs (positions past any block size, negative ones), and f64,
// whose device results must agree with the host's to double rounding; the partial rotation (a
// fraction of each row) likewise. Skips without a device.
#include <gtest/gtest.h>

#include <vector>

#include "cuda_test_util.h"
#include "ops/rope.h"

namespace gattn {
namespace {

using test::cuda_matches_cpu;
using test::frand;

Tensor positions(std::int64_t first, std::int64_t n, std::int64_t stride = 1) {
  std::vector<std::int32_t> p(static_cast<std::size_t>(n));
  for (std::int64_t t = 0; t < n; ++t) p[static_cast<std::size_t>(t)] = static_cast<std::int32_t>(first + stride * t);
  return Tensor::from_ints(p, {n});
}

TEST(CudaRope, MatchesCpuForwardAndBackward) {
  GATTN_REQUIRE_DEVICE();
  struct Case {
    Shape shape;
    Tensor pos;
  };
  for (const Case& c : std::vector<Case>{{{2, 3, 17, 8}, positions(0, 17)},
                                         {{1, 4, 5, 64}, positions(100000, 5)},
                                         {{3, 33, 2}, positions(-40, 33, 3)},
                                         {{2, 2, 129, 16}, positions(1 << 20, 129, 7)}}) {
    const Tensor x = frand(c.shape, 61);
    // x and the positions both go to the device; the positions get no gradient (i32).
    EXPECT_TRUE(cuda_matches_cpu([](const auto& in) { return ops::rope(in[0], in[1]); }, {x, c.pos}, {1e-6, 1e-6},
                                 {1e-6, 1e-6}))
        << shape_str(c.shape);
  }
}

TEST(CudaRope, DoubleMatchesCpu) {
  GATTN_REQUIRE_DEVICE();
  const Tensor x = test::randn({2, 3, 9, 12}, 62);
  const Tensor pos = positions(-3, 9, 1001);
  const Tensor y = ops::rope(x.to(Device::cuda), pos.to(Device::cuda));
  EXPECT_EQ(y.dtype(), DType::f64);
  EXPECT_TRUE(test::all_close(y.to(Device::cpu), ops::rope(x, pos), 1e-13, 1e-13));
}

TEST(CudaRope, PartialRotationMatchesCpu) {
  GATTN_REQUIRE_DEVICE();
  for (double fraction : {0.25, 0.5, 0.75}) {
    const Tensor x = frand({2, 3, 17, 16}, 64);
    EXPECT_TRUE(cuda_matches_cpu([fraction](const auto& in) { return ops::rope(in[0], in[1], 5e5, fraction); },
                                 {x, positions(-9, 17, 13)}, {1e-6, 1e-6}, {1e-6, 1e-6}))
        << fraction;
  }
  // An odd head width with an even rotated part, and f64 to double rounding.
  EXPECT_TRUE(cuda_matches_cpu([](const auto& in) { return ops::rope(in[0], in[1], 1e4, 0.5); },
                               {frand({3, 5, 9}, 65), positions(3, 5)}, {1e-6, 1e-6}, {1e-6, 1e-6}));
  const Tensor x = test::randn({2, 9, 12}, 66);
  const Tensor pos = positions(-3, 9, 1001);
  EXPECT_TRUE(test::all_close(ops::rope(x.to(Device::cuda), pos.to(Device::cuda), 1e4, 0.5).to(Device::cpu),
                              ops::rope(x, pos, 1e4, 0.5), 1e-13, 1e-13));
}

TEST(CudaRope, FractionOneGivesTheSameBits) {
  GATTN_REQUIRE_DEVICE();
  const Tensor x = frand({2, 3, 17, 8}, 67).to(Device::cuda), pos = positions(0, 17, 5).to(Device::cuda);
  EXPECT_TRUE(test::same_bits(ops::rope(x, pos), ops::rope(x, pos, ops::kRopeBase, 1.0)));
}

TEST(CudaRope, PositionsOnAnotherDeviceAreRefused) {
  GATTN_REQUIRE_DEVICE();
  EXPECT_THROW(ops::rope(frand({3, 4}, 63).to(Device::cuda), positions(0, 3)), DeviceError);
}

}  // namespace
}  // namespace gattn
