// The autocast scope: nesting restores the outer precision, and CPU ops ignore it (mixed precision
// is a GPU feature; CPU results inside a bf16 scope are bit-identical to those outside).
#include <gtest/gtest.h>

#include "ops/autocast.h"
#include "ops/matmul.h"
#include "test_util.h"

namespace gattn {
namespace {

TEST(Autocast, ScopesNestAndRestore) {
  EXPECT_EQ(ops::autocast_precision(), ops::ComputePrecision::fp32);
  {
    ops::AutocastScope outer(ops::ComputePrecision::bf16);
    EXPECT_TRUE(ops::autocast_bf16());
    {
      ops::AutocastScope inner(ops::ComputePrecision::fp32);
      EXPECT_FALSE(ops::autocast_bf16());
    }
    EXPECT_TRUE(ops::autocast_bf16());
  }
  EXPECT_FALSE(ops::autocast_bf16());
}

TEST(Autocast, CpuProductsIgnoreTheScope) {
  const Tensor x = test::rand({7, 12}, 1, -1, 1, DType::f32), w = test::rand({5, 12}, 2, -1, 1, DType::f32);
  const Tensor b = test::rand({5}, 3, -1, 1, DType::f32);
  const Tensor plain = ops::linear(x, w, b), plain_mm = ops::matmul(x, w, false, true);
  ops::AutocastScope bf16(ops::ComputePrecision::bf16);
  const Tensor scoped = ops::linear(x, w, b), scoped_mm = ops::matmul(x, w, false, true);
  EXPECT_EQ(scoped.dtype(), DType::f32);
  EXPECT_EQ(scoped.to_vector(), plain.to_vector());
  EXPECT_EQ(scoped_mm.to_vector(), plain_mm.to_vector());
}

}  // namespace
}  // namespace gattn
