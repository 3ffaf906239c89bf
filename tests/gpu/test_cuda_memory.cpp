// The CUDA memory layer on a real device: the caching allocator's steady state, host<->device
// round trips of every dtype, pinned-buffer copies, and CudaErrors from failing calls. Skips
// without a device, except the error checks, which need only a CUDA build.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/autograd/gradient_sum.h"
#include "core/cuda/device.h"
#include "core/cuda/device_memory.h"
#include "core/tensor/tensor.h"
#include "ops/cuda/runtime_info.h"
#include "test_util.h"
#ifdef GATTN_WITH_CUDA
#include <cublas_v2.h>
#include <cuda_runtime.h>
#ifdef GATTN_WITH_NCCL
#include <nccl.h>
#endif

#include "core/cuda/error.h"
#include "core/cuda/pinned_buffer.h"
#include "core/cuda/stream.h"
#endif

namespace gattn {
namespace {

#define GATTN_REQUIRE_DEVICE()                                      \
  do {                                                              \
    if (!cuda::compiled_in()) GTEST_SKIP() << "built without CUDA"; \
    if (!cuda::available()) GTEST_SKIP() << "no CUDA device";       \
  } while (0)

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), static_cast<std::size_t>(a.numel()) * dtype_size(a.dtype())) == 0;
}

TEST(CudaMemory, SteadyStateAllocationsNeverCallCudaMalloc) {
  GATTN_REQUIRE_DEVICE();
  const std::vector<Shape> step_shapes = {{1}, {3, 257}, {64, 1025}, {1000003}, {7, 11, 13}};
  auto run_step = [&] {
    std::vector<Tensor> live;
    for (const Shape& s : step_shapes) live.push_back(Tensor::empty(s, DType::f32, Device::cuda));
  };
  run_step();
  const auto warm = cuda::device_allocator_stats();
  for (int i = 0; i < 10; ++i) run_step();
  const auto after = cuda::device_allocator_stats();
  EXPECT_EQ(after.backend_allocations, warm.backend_allocations);
  EXPECT_GE(after.cache_hits, warm.cache_hits + 10 * static_cast<std::int64_t>(step_shapes.size()));
  EXPECT_EQ(after.allocated_bytes, warm.allocated_bytes);
  cuda::device_allocator_empty_cache();
  EXPECT_EQ(cuda::device_allocator_stats().cached_bytes, 0);
}

TEST(CudaMemory, RoundTripsEveryDTypeOfOddSizesBitExactly) {
  GATTN_REQUIRE_DEVICE();
  for (DType dtype : {DType::f32, DType::f64, DType::i32, DType::bf16}) {
    for (std::int64_t n : {1, 3, 255, 257, 100003}) {
      Tensor host = dtype == DType::i32 ? test::rand({n}, 7, -1000, 1000, DType::f64).to(DType::i32)
                                        : test::rand({n}, 7, -3, 3, DType::f64).to(dtype);
      Tensor dev = host.to(Device::cuda);
      EXPECT_EQ(dev.device(), Device::cuda);
      Tensor back = dev.clone().to(Device::cpu);  // device-to-device, then device-to-host
      EXPECT_TRUE(bitwise_equal(back, host)) << dtype_name(dtype) << " n = " << n;
      EXPECT_EQ(dev.at(n - 1), host.at(n - 1));
    }
  }
}

TEST(CudaMemory, FactoriesAndConversionsWorkOnDeviceTensors) {
  GATTN_REQUIRE_DEVICE();
  EXPECT_EQ(Tensor::zeros({5, 3}, DType::f32, Device::cuda).to_vector(), std::vector<double>(15, 0.0));
  EXPECT_EQ(Tensor::full({4}, 2.5, DType::bf16, Device::cuda).to_vector(), std::vector<double>(4, 2.5));
  Tensor d = Tensor::from({1, 2, 3}, {3}).to(Device::cuda);
  Tensor as_f64 = d.to(DType::f64);
  EXPECT_EQ(as_f64.device(), Device::cuda);
  EXPECT_EQ(as_f64.to_vector(), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(d.alias_rows(1, 3).to_vector(), (std::vector<double>{2, 3}));  // views keep their offset
  EXPECT_THROW(d.data<float>(), DeviceError);                              // no host access by pointer
}

TEST(CudaMemory, GradientSumsMatchTheHostsBitForBit) {
  // The backward engine's sums on the device (core/cuda/device_elements.cu) against its host loop.
  GATTN_REQUIRE_DEVICE();
  for (DType dtype : {DType::f32, DType::f64}) {
    for (std::int64_t n : {1, 257, 100003}) {
      const Tensor a = test::rand({n}, 11, -3, 3, DType::f64).to(dtype);
      const Tensor b = test::rand({n}, 12, -3, 3, DType::f64).to(dtype);
      const Tensor host = autograd::sum_gradients(a, b, "test");
      const Tensor dev = autograd::sum_gradients(a.to(Device::cuda), b.to(Device::cuda), "test");
      EXPECT_EQ(dev.device(), Device::cuda);
      EXPECT_TRUE(bitwise_equal(dev.to(Device::cpu), host)) << dtype_name(dtype) << " n = " << n;
      Tensor acc = a.to(Device::cuda);
      autograd::add_gradient_into(acc, b.to(Device::cuda), "test");
      EXPECT_TRUE(bitwise_equal(acc.to(Device::cpu), host)) << dtype_name(dtype) << " n = " << n;
    }
  }
  EXPECT_THROW(autograd::sum_gradients(Tensor::ones({2}).to(Device::cuda), Tensor::ones({2}), "backward"), DeviceError);
}

#ifdef GATTN_WITH_CUDA
TEST(CudaMemory, PinnedBuffersUploadAndDownloadAsynchronously) {
  GATTN_REQUIRE_DEVICE();
  const std::int64_t n = 4099;
  cuda::PinnedBuffer buffer(static_cast<std::size_t>(n) * sizeof(float));
  auto* p = static_cast<float*>(buffer.data());
  for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(i) * 0.5f;
  Tensor dev = Tensor::empty({n}, DType::f32, Device::cuda);
  buffer.upload(dev);
  buffer.wait();
  std::memset(buffer.data(), 0, buffer.bytes());  // safe now: the upload has finished
  Tensor host = dev.to(Device::cpu);
  for (std::int64_t i = 0; i < n; i += 1000) EXPECT_EQ(host.at(i), static_cast<double>(i) * 0.5);
  buffer.download(dev);
  buffer.wait();
  EXPECT_EQ(p[n - 1], static_cast<float>(n - 1) * 0.5f);
  Tensor too_big = Tensor::empty({n + 1}, DType::f32, Device::cuda);
  EXPECT_THROW(buffer.upload(too_big), ValueError);
  Tensor on_host = Tensor::empty({n}, DType::f32);
  EXPECT_THROW(buffer.upload(on_host), DeviceError);
}

TEST(CudaMemory, EventsOrderAndTimeTheComputeStream) {
  GATTN_REQUIRE_DEVICE();
  cuda::Event start(true), stop(true);
  start.record(cuda::compute_stream());
  Tensor t = Tensor::zeros({1 << 20}, DType::f32, Device::cuda);
  stop.record(cuda::compute_stream());
  stop.synchronize();
  EXPECT_TRUE(stop.query());
  EXPECT_GE(stop.elapsed_ms_since(start), 0.0f);
}

// A poll that answers "not ready" is an answer, not an error: the runtime still keeps
// cudaErrorNotReady as the thread's last error, and the launch check after the next kernel reads
// that error, so Event::query must clear it. The NCCL trainer polls its collective's event and then
// launches the bucket scale. The emulation build answers "not ready" to the first poll after a
// record, so this runs the not-ready path every time there; a GPU takes it while work is running.
TEST(CudaMemory, AnEventNotYetReadyLeavesNoErrorForTheNextLaunch) {
  GATTN_REQUIRE_DEVICE();
  Tensor t = Tensor::zeros({1 << 20}, DType::f32, Device::cuda);
  cuda::Event done;
  done.record(cuda::compute_stream());
  const bool ready = done.query();
#ifdef GATTN_CUDA_EMULATE
  EXPECT_FALSE(ready) << "the emulated runtime answers the first poll after a record with not ready";
#else
  (void)ready;
#endif
  EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess);
  Tensor u;
  ASSERT_NO_THROW(u = Tensor::ones({1 << 10}, DType::f32, Device::cuda));  // a fill kernel and its launch check
  done.synchronize();
  EXPECT_TRUE(done.query());
  EXPECT_EQ(u.to(Device::cpu).at(0), 1.0);
}

// Only a CUDA build is needed: without a device or driver the runtime call fails all the same.
TEST(CudaErrors, AFailingRuntimeCallThrowsCudaErrorNamingTheCall) {
  try {
    GATTN_CUDA_CHECK(cudaSetDevice(9999));
    FAIL() << "expected CudaError";
  } catch (const cuda::CudaError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.library(), "CUDA");
    EXPECT_EQ(e.call(), "cudaSetDevice(9999)");
    EXPECT_NE(what.find("CUDA error cuda"), std::string::npos) << what;
    EXPECT_NE(what.find("in cudaSetDevice(9999) at tests/gpu/test_cuda_memory.cpp:"), std::string::npos) << what;
  }
}

TEST(CudaErrors, NcclAndCublasStatusesBecomeCudaErrors) {
#ifdef GATTN_WITH_NCCL
  try {
    GATTN_NCCL_CHECK(ncclGetVersion(nullptr));
    FAIL() << "expected CudaError";
  } catch (const cuda::CudaError& e) {
    EXPECT_EQ(e.library(), "NCCL");
    EXPECT_NE(std::string(e.what()).find("in ncclGetVersion(nullptr) at"), std::string::npos) << e.what();
  }
#endif
  try {
    GATTN_CUBLAS_CHECK(cublasDestroy(nullptr));
    FAIL() << "expected CudaError";
  } catch (const cuda::CudaError& e) {
    EXPECT_EQ(e.library(), "cuBLAS");
    EXPECT_NE(std::string(e.what()).find("CUBLAS_STATUS_NOT_INITIALIZED"), std::string::npos) << e.what();
  }
}
#endif

}  // namespace
}  // namespace gattn
