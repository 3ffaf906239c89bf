// The CUDA axpy kernel against its CPU twin ops::axpy_. Skips without a device.
#include <gtest/gtest.h>

#include "ops/cuda/runtime_info.h"
#include "ops/elementwise.h"
#include "test_util.h"
#ifdef GATTN_WITH_CUDA
#include "ops/cuda/axpy.h"
#endif

namespace gattn {

TEST(CudaAxpy, MatchesCpuOnOddSizes) {
  if (!cuda::compiled_in()) GTEST_SKIP() << "built without CUDA";
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
#ifdef GATTN_WITH_CUDA
  for (std::int64_t n : {1, 255, 257, 100003}) {
    Tensor x = test::rand({n}, 1, -1, 1, DType::f32), y = test::rand({n}, 2, -1, 1, DType::f32);
    Tensor expected = y.clone();
    ops::axpy_(expected, 0.75, x);
    Tensor got = y.clone();
    cuda::axpy_host(got.data<float>(), x.data<float>(), 0.75f, n);
    EXPECT_TRUE(test::all_close(got, expected, 1e-6, 1e-6)) << "n = " << n;
  }
#endif
}

}  // namespace gattn
