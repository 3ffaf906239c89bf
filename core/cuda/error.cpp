// Throwing CudaErrors from CUDA runtime, cuBLAS and NCCL statuses (CUDA builds only).
#ifdef GATTN_WITH_CUDA
#include <cublas_v2.h>
#include <cuda_runtime.h>
#ifdef GATTN_WITH_NCCL
#include <nccl.h>
#endif

#include <string>

#include "core/cuda/error.h"

namespace gattn::cuda {

void throw_cuda_error(int status, const char* call, const char* file, int line) {
  const auto e = static_cast<cudaError_t>(status);
  // Clears the error unless it is sticky, so the next unrelated call does not report it again.
  cudaGetLastError();
  std::string message = format_cuda_error("CUDA", cudaGetErrorName(e), cudaGetErrorString(e), call, file, line);
  if (e == cudaErrorMemoryAllocation) throw CudaOutOfMemory(std::move(message), "CUDA", status, call);
  throw CudaError(std::move(message), "CUDA", status, call);
}

void throw_cublas_error(int status, const char* call, const char* file, int line) {
  const auto s = static_cast<cublasStatus_t>(status);
  throw CudaError(format_cuda_error("cuBLAS", cublasGetStatusName(s), cublasGetStatusString(s), call, file, line),
                  "cuBLAS", status, call);
}

void throw_nccl_error(int status, const char* call, const char* file, int line) {
  // NCCL has no name function; its status values are stable, so the number names it.
  std::string name = "ncclResult ";
  name.append(std::to_string(status));
#ifdef GATTN_WITH_NCCL
  const char* text = ncclGetErrorString(static_cast<ncclResult_t>(status));
#else
  const char* text = "(this build has no NCCL)";
#endif
  throw CudaError(format_cuda_error("NCCL", name, text, call, file, line), "NCCL", status, call);
}

}  // namespace gattn::cuda
#endif
