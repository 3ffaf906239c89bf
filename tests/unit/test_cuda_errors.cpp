// What the CPU can check of the CUDA runtime layer: CudaError messages, and the DeviceError a CUDA
// tensor raises in a build without CUDA or on a machine without a device.
#include <gtest/gtest.h>

#include <string>

#include "core/cuda/device.h"
#include "core/cuda/device_memory.h"
#include "core/cuda/error.h"
#include "core/tensor/tensor.h"

namespace gattn::cuda {
namespace {

TEST(CudaErrors, MessageNamesLibraryStatusCallAndRepositoryFileLine) {
  const std::string msg =
      format_cuda_error("CUDA", "cudaErrorInvalidValue", "invalid argument", "cudaMemcpyAsync(dst, src, n, kind, s)",
                        "/home/me/gattn/core/cuda/copy.cpp", 42);
  EXPECT_EQ(msg,
            "CUDA error cudaErrorInvalidValue (invalid argument) in cudaMemcpyAsync(dst, src, n, kind, s) at "
            "core/cuda/copy.cpp:42");
}

TEST(CudaErrors, MessageKeepsUnknownPathsWholeAndSkipsARepeatedDescription) {
  EXPECT_EQ(format_cuda_error("NCCL", "ncclResult 3", "internal error", "ncclAllReduce(...)", "x.cu", 7),
            "NCCL error ncclResult 3 (internal error) in ncclAllReduce(...) at x.cu:7");
  EXPECT_EQ(
      format_cuda_error("cuBLAS", "CUBLAS_STATUS_X", "CUBLAS_STATUS_X", "cublasSgemm(h)", "/a/ops/cuda/gemm.cu", 1),
      "cuBLAS error CUBLAS_STATUS_X in cublasSgemm(h) at ops/cuda/gemm.cu:1");
}

TEST(CudaErrors, CudaErrorIsADeviceErrorCarryingTheCall) {
  try {
    throw CudaError("m", "CUDA", 1, "cudaFree(p)");
  } catch (const DeviceError& e) {
    const auto& c = dynamic_cast<const CudaError&>(e);
    EXPECT_EQ(c.library(), "CUDA");
    EXPECT_EQ(c.code(), 1);
    EXPECT_EQ(c.call(), "cudaFree(p)");
  }
}

TEST(CudaErrors, CudaTensorsWithoutADeviceRaiseAClearDeviceError) {
  if (available()) GTEST_SKIP() << "a CUDA device is present (tests/gpu covers this path)";
  try {
    Tensor::empty({3}, DType::f32, Device::cuda);
    FAIL() << "expected DeviceError";
  } catch (const DeviceError& e) {
    const std::string what = e.what();
#ifdef GATTN_WITH_CUDA
    EXPECT_NE(what.find("no CUDA device"), std::string::npos) << what;
#else
    EXPECT_NE(what.find("this build has no CUDA"), std::string::npos) << what;
#endif
  }
  EXPECT_THROW(Tensor::full({2}, 1.0).to(Device::cuda), DeviceError);
  EXPECT_EQ(device_allocator_stats().backend_allocations, 0);
}

}  // namespace
}  // namespace gattn::cuda
