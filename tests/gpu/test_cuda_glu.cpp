// The CUDA gated linear units (swiglu, glu_sigmoid) against the CPU ops: forward and both
// gradients on odd sizes, large gates included. Skips without a device.
#include <gtest/gtest.h>

#include "cuda_test_util.h"
#include "ops/glu.h"

namespace gattn {
namespace {

using test::cuda_matches_cpu;
using test::frand;

TEST(CudaGlu, MatchesCpuForwardAndBackward) {
  GATTN_REQUIRE_DEVICE();
  for (glu::Activation act : {glu::Activation::silu, glu::Activation::sigmoid})
    for (const Shape& s : {Shape{1}, Shape{7}, Shape{3, 33}, Shape{2, 5, 1000}, Shape{1, 70001}}) {
      const Tensor a = frand(s, 80, -12.0, 12.0), u = frand(s, 81, -2.0, 2.0);
      EXPECT_TRUE(cuda_matches_cpu([act](const auto& in) { return ops::glu(in[0], in[1], act); }, {a, u}, {1e-6, 1e-5},
                                   {1e-6, 1e-5}))
          << shape_str(s) << (act == glu::Activation::silu ? " swiglu" : " glu_sigmoid");
    }
}

TEST(CudaGlu, SwiGluAndGluSigmoidNameTheirOp) {
  GATTN_REQUIRE_DEVICE();
  const Tensor a = frand({2, 3}, 82).to(Device::cuda);
  EXPECT_NE(test::error_of([&] { ops::swiglu(a, frand({2, 3}, 83)); }).find("swiglu"), std::string::npos);
  EXPECT_NE(test::error_of([&] { ops::glu_sigmoid(a, frand({2, 3}, 83)); }).find("glu_sigmoid"), std::string::npos);
  EXPECT_THROW(ops::swiglu(a.to(DType::f64), a.to(DType::f64)), DTypeError);
}

}  // namespace
}  // namespace gattn
