// The emulation build's own machinery (emulation/): the CUDA execution model it runs kernels under
// (barriers, shuffles, per-block shared memory), the errors a GPU would raise (launch limits), the
// ones only emulation can raise (host pointers handed to kernels, copies out of bounds or in the
// wrong direction, a block that can never finish), fresh device memory reading as NaN, and the
// guard that kills a process whose host code touches device memory. Skips in other builds.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#ifdef GATTN_CUDA_EMULATE
#include "emulation/kernel_model.h"
#include "emulation/launch.h"
#endif

namespace gattn {
namespace {

#ifndef GATTN_CUDA_EMULATE
TEST(CudaEmulation, OnlyInTheEmulationBuild) { GTEST_SKIP() << "not the emulation build (-DGATTN_CUDA_EMULATE=ON)"; }
#else

// Each block sums its threads' values through shared memory; lane pairs swap through a shuffle.
__global__ void block_sums_kernel(const int* in, int* sums, int* swapped) {
  __shared__ int values[64];
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  values[threadIdx.x] = in[i];
  __syncthreads();
  if (threadIdx.x == 0) {
    int s = 0;
    for (unsigned t = 0; t < blockDim.x; ++t) s += values[t];
    sums[blockIdx.x] = s;
  }
  swapped[i] = __shfl_xor_sync(0xffffffffu, in[i], 1);
}

// Half a warp waits at __syncthreads, the other half at a shuffle: no thread can go on.
__global__ void deadlock_kernel(int* out) {
  int v = static_cast<int>(threadIdx.x);
  if (threadIdx.x < 16)
    __syncthreads();
  else
    v = __shfl_xor_sync(0xffffffffu, v, 1);
  out[threadIdx.x] = v;
}

__global__ void write_kernel(float* out) { out[threadIdx.x] = 1.0f; }

template <class T>
T* device_array(std::size_t n) {
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, n * sizeof(T)), cudaSuccess);
  return static_cast<T*>(p);
}

TEST(CudaEmulation, BarriersSharedMemoryAndShufflesFollowTheCudaModel) {
  std::vector<int> in(128);
  for (int i = 0; i < 128; ++i) in[static_cast<std::size_t>(i)] = i * 3 + 1;
  int *d_in = device_array<int>(128), *d_sums = device_array<int>(2), *d_swapped = device_array<int>(128);
  ASSERT_EQ(cudaMemcpy(d_in, in.data(), 128 * sizeof(int), cudaMemcpyHostToDevice), cudaSuccess);
  emu::launch(block_sums_kernel, dim3(2), dim3(64), 0, nullptr, d_in, d_sums, d_swapped);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  std::vector<int> sums(2), swapped(128);
  ASSERT_EQ(cudaMemcpy(sums.data(), d_sums, 2 * sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(swapped.data(), d_swapped, 128 * sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
  for (int b = 0; b < 2; ++b) {
    int want = 0;
    for (int t = 0; t < 64; ++t) want += in[static_cast<std::size_t>(b * 64 + t)];
    EXPECT_EQ(sums[static_cast<std::size_t>(b)], want) << "block " << b;
  }
  for (int i = 0; i < 128; ++i)
    EXPECT_EQ(swapped[static_cast<std::size_t>(i)], in[static_cast<std::size_t>(i ^ 1)]) << i;
  for (void* p : {static_cast<void*>(d_in), static_cast<void*>(d_sums), static_cast<void*>(d_swapped)}) cudaFree(p);
}

TEST(CudaEmulation, ABlockThatCanNeverFinishIsALaunchFailureNotAHang) {
  int* out = device_array<int>(32);
  emu::launch(deadlock_kernel, dim3(1), dim3(32), 0, nullptr, out);
  EXPECT_EQ(cudaGetLastError(), cudaErrorLaunchFailure);
  EXPECT_NE(std::string(cudaGetErrorString(cudaErrorLaunchFailure)).find("deadlocked"), std::string::npos);
  cudaFree(out);
}

TEST(CudaEmulation, LaunchLimitsAndHostPointerArgumentsAreErrors) {
  float* out = device_array<float>(2048);
  emu::launch(write_kernel, dim3(1), dim3(2048), 0, nullptr, out);  // over 1024 threads per block
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  emu::launch(write_kernel, dim3(1, 70000), dim3(32), 0, nullptr, out);  // grid.y over 65535
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  emu::launch(write_kernel, dim3(1), dim3(32), 64 * 1024, nullptr,
              out);  // 64 KiB of dynamic shared memory, not opted in
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  std::vector<float> host(32);
  emu::launch(write_kernel, dim3(1), dim3(32), 0, nullptr, host.data());  // a host pointer
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_NE(std::string(cudaGetErrorString(cudaErrorInvalidValue)).find("host pointer"), std::string::npos);
  cudaFree(out);
}

TEST(CudaEmulation, CopiesCheckTheirDirectionAndStayInsideTheirAllocations) {
  float* d = device_array<float>(16);
  std::vector<float> host(32, 1.0f);
  EXPECT_EQ(cudaMemcpy(d, host.data(), 16 * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(d, host.data(), 32 * sizeof(float), cudaMemcpyHostToDevice),
            cudaErrorInvalidValue);  // past the end
  EXPECT_EQ(cudaMemcpy(host.data(), d, 16 * sizeof(float), cudaMemcpyHostToDevice), cudaErrorInvalidValue);  // reversed
  EXPECT_EQ(cudaMemcpy(d, host.data(), 16 * sizeof(float), cudaMemcpyDeviceToDevice),
            cudaErrorInvalidValue);  // host source
  cudaGetLastError();
  cudaFree(d);
}

// The runtime's per-thread last error: every failing call sets it, cudaPeekAtLastError reads it,
// cudaGetLastError reads and clears it.
TEST(CudaEmulation, EveryFailingCallLeavesTheThreadsLastError) {
  cudaGetLastError();
  EXPECT_EQ(cudaSetDevice(9999), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorInvalidDevice);  // peeking does not clear
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess);
}

// Polls answer "not ready" once for work queued since the last synchronize or poll (see
// emulation/cuda_runtime.cpp), and that answer is the thread's last error like any other status.
TEST(CudaEmulation, PollsAnswerNotReadyOnceForQueuedWork) {
  cudaGetLastError();
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  cudaEvent_t e = nullptr;
  ASSERT_EQ(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), cudaSuccess);
  float* d = device_array<float>(64);
  EXPECT_EQ(cudaStreamQuery(s), cudaSuccess);  // nothing queued
  EXPECT_EQ(cudaEventQuery(e), cudaSuccess);   // never recorded

  ASSERT_EQ(cudaMemsetAsync(d, 0, 64 * sizeof(float), s), cudaSuccess);
  EXPECT_EQ(cudaStreamQuery(s), cudaErrorNotReady);
  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorNotReady);
  EXPECT_EQ(cudaGetLastError(), cudaErrorNotReady);
  EXPECT_EQ(cudaStreamQuery(s), cudaSuccess);
  emu::launch(write_kernel, dim3(1), dim3(32), 0, s, d);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaStreamQuery(s), cudaErrorNotReady);
  EXPECT_EQ(cudaStreamQuery(s), cudaSuccess);

  ASSERT_EQ(cudaEventRecord(e, s), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(e), cudaErrorNotReady);
  EXPECT_EQ(cudaGetLastError(), cudaErrorNotReady);
  EXPECT_EQ(cudaEventQuery(e), cudaSuccess);
  // Synchronizing finishes the work: the polls after it succeed at once.
  ASSERT_EQ(cudaEventRecord(e, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(e), cudaSuccess);
  EXPECT_EQ(cudaStreamQuery(s), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(e, s), cudaSuccess);
  ASSERT_EQ(cudaEventSynchronize(e), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(e), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(e, s), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(e), cudaSuccess);
  EXPECT_EQ(cudaStreamQuery(s), cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);

  cudaFree(d);
  cudaEventDestroy(e);
  cudaStreamDestroy(s);
}

TEST(CudaEmulation, FreshDeviceMemoryReadsAsNaNNotZeros) {
  float* d = device_array<float>(8);
  std::vector<float> host(8, 0.0f);
  ASSERT_EQ(cudaMemcpy(host.data(), d, 8 * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  for (float x : host) EXPECT_TRUE(std::isnan(x));
  cudaFree(d);
}

TEST(CudaEmulationDeathTest, HostCodeThatReadsDeviceMemoryDiesNamingIt) {
  const char* guard = std::getenv("GATTN_EMU_GUARD");
  if (guard && std::strcmp(guard, "0") == 0) GTEST_SKIP() << "the guard is off (GATTN_EMU_GUARD=0)";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  float* d = device_array<float>(4);
  EXPECT_DEATH({ std::printf("%f\n", static_cast<double>(*static_cast<volatile float*>(d))); },
               "host code touched device memory");
  cudaFree(d);
}

#endif

}  // namespace
}  // namespace gattn
