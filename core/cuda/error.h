// Typed errors for the CUDA runtime, cuBLAS and NCCL, and the macros that raise them. The header
// needs no CUDA headers, so plain C++ can catch CudaError; the macros themselves are only usable in
// files that include the library they check (cuda_runtime.h, cublas_v2.h, nccl.h).
#pragma once
#include <string>
#include <utility>

#include "core/tensor/error.h"

namespace gattn::cuda {

// A failed call into the CUDA runtime, cuBLAS or NCCL. what() reads
// "CUDA error cudaErrorInvalidValue (invalid argument) in cudaMemcpyAsync(...) at core/cuda/copy.cpp:42".
class CudaError : public DeviceError {
 public:
  CudaError(std::string message, std::string library, int code, std::string call)
      : DeviceError(std::move(message)), library_(std::move(library)), code_(code), call_(std::move(call)) {}
  const std::string& library() const { return library_; }  // "CUDA", "cuBLAS" or "NCCL"
  int code() const { return code_; }                       // the library's status value
  const std::string& call() const { return call_; }        // the call's source text
 private:
  std::string library_;
  int code_;
  std::string call_;
};

// The device ran out of memory even after the caching allocator returned its cached blocks.
class CudaOutOfMemory : public CudaError {
 public:
  using CudaError::CudaError;
};

// The message every CudaError carries (pure formatting, testable without a device). `file` is cut
// to its path inside the repository so messages do not depend on where the tree was built.
std::string format_cuda_error(const std::string& library, const std::string& status_name,
                              const std::string& description, const std::string& call, const char* file, int line);

// Build the message from the library's own status strings and throw. Only defined in CUDA builds;
// they take the status as int so this header stays free of CUDA types.
[[noreturn]] void throw_cuda_error(int status, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas_error(int status, const char* call, const char* file, int line);
[[noreturn]] void throw_nccl_error(int status, const char* call, const char* file, int line);

}  // namespace gattn::cuda

// Each macro evaluates `call` once and throws a CudaError naming it when it does not succeed.
#define GATTN_CUDA_CHECK(call)                                                                     \
  do {                                                                                             \
    const cudaError_t gattn_status_ = (call);                                                      \
    if (gattn_status_ != cudaSuccess)                                                              \
      ::gattn::cuda::throw_cuda_error(static_cast<int>(gattn_status_), #call, __FILE__, __LINE__); \
  } while (0)

#define GATTN_CUBLAS_CHECK(call)                                                                     \
  do {                                                                                               \
    const cublasStatus_t gattn_status_ = (call);                                                     \
    if (gattn_status_ != CUBLAS_STATUS_SUCCESS)                                                      \
      ::gattn::cuda::throw_cublas_error(static_cast<int>(gattn_status_), #call, __FILE__, __LINE__); \
  } while (0)

#define GATTN_NCCL_CHECK(call)                                                                     \
  do {                                                                                             \
    const ncclResult_t gattn_status_ = (call);                                                     \
    if (gattn_status_ != ncclSuccess)                                                              \
      ::gattn::cuda::throw_nccl_error(static_cast<int>(gattn_status_), #call, __FILE__, __LINE__); \
  } while (0)
