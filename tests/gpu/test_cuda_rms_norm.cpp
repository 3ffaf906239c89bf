// The CUDA RMSNorm against the CPU op: forward and backward (dx, dweight) with and without weight,
// plain and zero-centred, on odd sizes and many rows (several dweight chunks); dweight is the same
// bits on a second run; no rows give a zero dweight. Skips without a device.
#include <gtest/gtest.h>

#include "cuda_test_util.h"
#include "ops/nn_functional.h"

namespace gattn {
namespace {

using test::cuda_matches_cpu;
using test::frand;

TEST(CudaRmsNorm, MatchesCpuWithAndWithoutWeight) {
  GATTN_REQUIRE_DEVICE();
  for (const Shape& s : {Shape{1, 1}, Shape{7}, Shape{3, 33}, Shape{2, 5, 768}, Shape{1000, 7}, Shape{3, 4097}}) {
    const std::int64_t C = s.back();
    const Tensor x = frand(s, 62, -3.0, 3.0), w = frand({C}, 63, -1.0, 1.0);
    // dx has a cancellation (ĝ − x̂ · mean(ĝ ⊙ x̂)): an absolute floor as well as the relative bound.
    const test::Tolerance tol{2e-5, 1e-5};
    for (bool offset : {false, true})
      EXPECT_TRUE(cuda_matches_cpu([offset](const auto& in) { return ops::rms_norm(in[0], in[1], 1e-6, offset); },
                                   {x, w}, tol, tol))
          << shape_str(s) << " offset " << offset;
    EXPECT_TRUE(cuda_matches_cpu([](const auto& in) { return ops::rms_norm(in[0], Tensor()); }, {x}, tol, tol))
        << shape_str(s) << " without weight";
  }
}

TEST(CudaRmsNorm, WeightGradIsDeterministic) {
  GATTN_REQUIRE_DEVICE();
  const Tensor x = frand({513, 96}, 64).to(Device::cuda), g = frand({513, 96}, 65).to(Device::cuda);
  auto dw = [&] {
    Tensor w = frand({96}, 66).to(Device::cuda).detach().set_requires_grad(true);
    ops::rms_norm(x, w).backward(g);
    return w.grad();
  };
  EXPECT_TRUE(test::same_bits(dw(), dw()));
}

TEST(CudaRmsNorm, NoRowsGiveAZeroWeightGrad) {
  GATTN_REQUIRE_DEVICE();
  EXPECT_TRUE(cuda_matches_cpu([](const auto& in) { return ops::rms_norm(in[0], in[1]); },
                               {Tensor::zeros({0, 5}), frand({5}, 67)}));
}

}  // namespace
}  // namespace gattn
