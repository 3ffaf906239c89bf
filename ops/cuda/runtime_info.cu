// CUDA, cuBLAS and NCCL versions and device discovery. Linking cuBLAS and NCCL here proves in CI
// that the CUDA build is complete even on machines without a GPU (NCCL only where the build has it).
#include <cublas_v2.h>
#include <cuda_runtime.h>
#ifdef GATTN_WITH_NCCL
#include <nccl.h>
#endif

#include "ops/cuda/runtime_info.h"

namespace gattn::cuda {

bool compiled_in() { return true; }

std::string toolkit_version() {
  return std::to_string(CUDART_VERSION / 1000) + "." + std::to_string((CUDART_VERSION % 1000) / 10);
}

std::string nccl_version() {
#ifndef GATTN_WITH_NCCL
  return "no";
#else
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "no";
  // NCCL >= 2.9 encodes major*10000 + minor*100 + patch.
  return std::to_string(v / 10000) + "." + std::to_string((v % 10000) / 100) + "." + std::to_string(v % 100);
#endif
}

std::string cublas_version() {
  int major = 0, minor = 0, patch = 0;
  if (cublasGetProperty(MAJOR_VERSION, &major) != CUBLAS_STATUS_SUCCESS) return "no";
  cublasGetProperty(MINOR_VERSION, &minor);
  cublasGetProperty(PATCH_LEVEL, &patch);
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace gattn::cuda
