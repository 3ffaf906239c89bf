// The cuBLAS calls gattn makes, over the emulated device (see gemm_reference.h). A handle remembers
// its stream; the work runs at once.
#include <cublas_v2.h>

#include <cstdio>
#include <string>

#include "emulation/device_arena.h"
#include "emulation/gemm_reference.h"
#include "emulation/runtime_state.h"

struct cublasContext {
  cudaStream_t stream = nullptr;
};

namespace {

cublasStatus_t refuse(cublasStatus_t s, const std::string& why) {
  std::fprintf(stderr, "gattn CUDA emulation: cuBLAS: %s\n", why.c_str());
  return s;
}

bool compute_ok(cublasComputeType_t t, bool& tf32) {
  tf32 = t == CUBLAS_COMPUTE_32F_FAST_TF32;
  return t == CUBLAS_COMPUTE_32F || t == CUBLAS_COMPUTE_32F_FAST_TF32;
}

cublasStatus_t strided(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                       const void* alpha, const void* A, cudaDataType at, int lda, long long sa, const void* B,
                       cudaDataType bt, int ldb, long long sb, const void* beta, void* C, cudaDataType ct, int ldc,
                       long long sc, int batch, cublasComputeType_t compute, const char* call) {
  if (!h) return refuse(CUBLAS_STATUS_NOT_INITIALIZED, std::string(call) + ": null handle");
  if (!gattn::emu::valid_stream(h->stream))
    return refuse(CUBLAS_STATUS_INVALID_VALUE, std::string(call) + ": the handle's stream is gone");
  gattn::emu::queue_work(h->stream);
  gattn::emu::GemmProblem p;
  if (!compute_ok(compute, p.tf32))
    return refuse(CUBLAS_STATUS_NOT_SUPPORTED, std::string(call) + ": compute type not emulated");
  if (batch < 0) return refuse(CUBLAS_STATUS_INVALID_VALUE, std::string(call) + ": negative batch");
  p.m = m, p.n = n, p.k = k;
  p.a = {A, at, lda, ta != CUBLAS_OP_N};
  p.b = {B, bt, ldb, tb != CUBLAS_OP_N};
  p.c_type = ct;
  p.ldc = ldc;
  p.alpha = *static_cast<const float*>(alpha);
  p.beta = *static_cast<const float*>(beta);
  const std::size_t ea = at == CUDA_R_16BF ? 2 : 4, eb = bt == CUDA_R_16BF ? 2 : 4, ec = ct == CUDA_R_16BF ? 2 : 4;
  for (int i = 0; i < batch; ++i) {
    p.a.data = static_cast<const char*>(A) + static_cast<std::size_t>(i * sa) * ea;
    p.b.data = static_cast<const char*>(B) + static_cast<std::size_t>(i * sb) * eb;
    p.c = static_cast<char*>(C) + static_cast<std::size_t>(i * sc) * ec;
    if (const std::string why = gattn::emu::check_gemm(p); !why.empty())
      return refuse(CUBLAS_STATUS_INVALID_VALUE, std::string(call) + " (batch " + std::to_string(i) + "): " + why);
  }
  gattn::emu::DeviceAccess access;
  for (int i = 0; i < batch; ++i) {
    p.a.data = static_cast<const char*>(A) + static_cast<std::size_t>(i * sa) * ea;
    p.b.data = static_cast<const char*>(B) + static_cast<std::size_t>(i * sb) * eb;
    p.c = static_cast<char*>(C) + static_cast<std::size_t>(i * sc) * ec;
    gattn::emu::run_gemm(p);
  }
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

cublasStatus_t cublasCreate(cublasHandle_t* h) {
  *h = new cublasContext;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t h) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete h;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  h->stream = s;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetProperty(libraryPropertyType type, int* value) {
  // The toolkit's cuBLAS version the emulation stands in for.
  switch (type) {
    case MAJOR_VERSION:
      *value = CUBLAS_VER_MAJOR;
      break;
    case MINOR_VERSION:
      *value = CUBLAS_VER_MINOR;
      break;
    case PATCH_LEVEL:
      *value = CUBLAS_VER_PATCH;
      break;
  }
  return CUBLAS_STATUS_SUCCESS;
}

const char* cublasGetStatusName(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    default:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
  }
}

const char* cublasGetStatusString(cublasStatus_t s) { return cublasGetStatusName(s); }

cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            const void* alpha, const void* A, cudaDataType at, int lda, const void* B, cudaDataType bt,
                            int ldb, const void* beta, void* C, cudaDataType ct, int ldc, cublasComputeType_t compute,
                            cublasGemmAlgo_t) {
  return strided(h, ta, tb, m, n, k, alpha, A, at, lda, 0, B, bt, ldb, 0, beta, C, ct, ldc, 0, 1, compute,
                 "cublasGemmEx");
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                          int k, const void* alpha, const void* A, cudaDataType at, int lda,
                                          long long sa, const void* B, cudaDataType bt, int ldb, long long sb,
                                          const void* beta, void* C, cudaDataType ct, int ldc, long long sc, int batch,
                                          cublasComputeType_t compute, cublasGemmAlgo_t) {
  return strided(h, ta, tb, m, n, k, alpha, A, at, lda, sa, B, bt, ldb, sb, beta, C, ct, ldc, sc, batch, compute,
                 "cublasGemmStridedBatchedEx");
}

cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const float* alpha, const float* A, int lda, const float* B, int ldb, const float* beta,
                           float* C, int ldc) {
  return strided(h, ta, tb, m, n, k, alpha, A, CUDA_R_32F, lda, 0, B, CUDA_R_32F, ldb, 0, beta, C, CUDA_R_32F, ldc, 0,
                 1, CUBLAS_COMPUTE_32F, "cublasSgemm");
}
