// y += alpha * x on the GPU: the first CUDA kernel, kept as the smallest end-to-end check of the
// device path (allocation, launch, copy back) against its CPU twin ops::axpy_. The CUDA backend
// issue replaces it with the real elementwise family.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "ops/cuda/axpy.h"

namespace gattn::cuda {

namespace {
__global__ void axpy_kernel(float* y, const float* x, float alpha, long long n) {
  long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] += alpha * x[i];
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("CUDA ") + what + ": " + cudaGetErrorString(e));
}
}  // namespace

void axpy_host(float* y, const float* x, float alpha, long long n) {
  float *dy = nullptr, *dx = nullptr;
  std::size_t bytes = static_cast<std::size_t>(n) * sizeof(float);
  check(cudaMalloc(&dy, bytes), "cudaMalloc");
  check(cudaMalloc(&dx, bytes), "cudaMalloc");
  check(cudaMemcpy(dy, y, bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
  check(cudaMemcpy(dx, x, bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
  int threads = 256;
  long long blocks = (n + threads - 1) / threads;
  if (blocks > 0) axpy_kernel<<<static_cast<unsigned>(blocks), threads>>>(dy, dx, alpha, n);
  check(cudaGetLastError(), "axpy_kernel launch");
  check(cudaMemcpy(y, dy, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
  cudaFree(dy);
  cudaFree(dx);
}

}  // namespace gattn::cuda
