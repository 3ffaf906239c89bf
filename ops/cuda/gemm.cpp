// cuBLAS GEMMs for row-major matrices. cuBLAS is column-major, and a row-major [M, N] C is the
// column-major Cᵀ [N, M], so C = op(A)·op(B) is computed as Cᵀ = op(B)ᵀ·op(A)ᵀ: B goes first with
// its own transpose flag, m = N, n = M, and every leading dimension is the stored row length.
// One cuBLAS handle per device, bound to the compute stream at each call.
#ifdef GATTN_WITH_CUDA
#include "ops/cuda/gemm.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <atomic>
#include <climits>
#include <mutex>
#include <string>
#include <vector>

#include "core/cuda/error.h"

namespace gattn::cuda {

namespace {

std::atomic<bool> g_tf32{true};

cublasHandle_t handle_for_current_device() {
  static std::mutex mu;
  static std::vector<cublasHandle_t> handles;  // never destroyed: used until process exit
  int device = 0;
  GATTN_CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(mu);
  if (handles.size() <= static_cast<std::size_t>(device)) handles.resize(static_cast<std::size_t>(device) + 1, nullptr);
  cublasHandle_t& h = handles[static_cast<std::size_t>(device)];
  if (!h) GATTN_CUBLAS_CHECK(cublasCreate(&h));
  return h;
}

int dim32(long long v, const char* what) {
  if (v < 0 || v > INT_MAX) {
    std::string msg = "gemm: ";
    msg += what;
    msg += " ";
    msg += std::to_string(v);
    msg += " exceeds cuBLAS's 32-bit dimension range";
    throw ValueError(msg);
  }
  return static_cast<int>(v);
}

// The element types of the operands A, B and of the result C.
cudaDataType_t operand_type(GemmType t) { return t == GemmType::f32 ? CUDA_R_32F : CUDA_R_16BF; }
cudaDataType_t result_type(GemmType t) { return t == GemmType::bf16 ? CUDA_R_16BF : CUDA_R_32F; }
std::size_t operand_size(GemmType t) { return t == GemmType::f32 ? 4 : 2; }
std::size_t result_size(GemmType t) { return t == GemmType::bf16 ? 2 : 4; }

cublasComputeType_t compute_type(GemmType t) {
  if (t == GemmType::f32 && g_tf32.load()) return CUBLAS_COMPUTE_32F_FAST_TF32;
  return CUBLAS_COMPUTE_32F;  // exact f32 math; bf16 inputs also accumulate in f32
}

// C_i = alpha op(A_i) op(B_i) + beta C_i for i < batch (batch 1: a plain GEMM).
void gemm_strided(GemmType t, long long batch, bool ta, bool tb, long long M, long long N, long long K, float alpha,
                  const void* A, long long lda, long long sa, const void* B, long long ldb, long long sb, float beta,
                  void* C, long long ldc, long long sc, CUstream_st* stream) {
  if (batch <= 0 || M <= 0 || N <= 0) return;
  if (K == 0) {
    // An empty inner sum: make C = beta·C ourselves (only beta 0 occurs; scale by a GEMM otherwise is not needed).
    if (beta != 0.0f) return;  // beta·C + 0 with beta = 1 leaves C as it is
    for (long long i = 0; i < (sc == 0 ? 1 : batch); ++i)
      for (long long r = 0; r < M; ++r)
        GATTN_CUDA_CHECK(
            cudaMemsetAsync(static_cast<char*>(C) + static_cast<std::size_t>(i * sc + r * ldc) * result_size(t), 0,
                            static_cast<std::size_t>(N) * result_size(t), stream));
    return;
  }
  cublasHandle_t h = handle_for_current_device();
  GATTN_CUBLAS_CHECK(cublasSetStream(h, stream));
  const cublasOperation_t op_b = tb ? CUBLAS_OP_T : CUBLAS_OP_N, op_a = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int m = dim32(N, "N"), n = dim32(M, "M"), k = dim32(K, "K");
  const int la = dim32(lda, "lda"), lb = dim32(ldb, "ldb"), lc = dim32(ldc, "ldc");
  const cudaDataType_t dt = operand_type(t), ctype = result_type(t);
  const cublasComputeType_t ct = compute_type(t);
  if (batch == 1) {
    GATTN_CUBLAS_CHECK(cublasGemmEx(h, op_b, op_a, m, n, k, &alpha, B, dt, lb, A, dt, la, &beta, C, ctype, lc, ct,
                                    CUBLAS_GEMM_DEFAULT));
  } else {
    GATTN_CUBLAS_CHECK(cublasGemmStridedBatchedEx(h, op_b, op_a, m, n, k, &alpha, B, dt, lb, sb, A, dt, la, sa, &beta,
                                                  C, ctype, lc, sc, dim32(batch, "batch"), ct, CUBLAS_GEMM_DEFAULT));
  }
}

const void* offset(const void* p, long long elems, GemmType t) {
  return static_cast<const char*>(p) + static_cast<std::size_t>(elems) * operand_size(t);
}

}  // namespace

void set_tf32_enabled(bool on) { g_tf32.store(on); }
bool tf32_enabled() { return g_tf32.load(); }

void gemm(GemmType type, bool trans_a, bool trans_b, long long M, long long N, long long K, float alpha, const void* A,
          long long lda, const void* B, long long ldb, float beta, void* C, long long ldc, CUstream_st* stream) {
  gemm_strided(type, 1, trans_a, trans_b, M, N, K, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, stream);
}

void batched_gemm(GemmType type, long long batch, bool tx, bool ty, long long M, long long N, long long K,
                  const void* X, long long sx, const void* Y, long long sy, void* C, long long sc,
                  CUstream_st* stream) {
  if (batch <= 0 || M <= 0 || N <= 0) return;
  const long long ldx = tx ? M : K, ldy = ty ? K : N;
  const bool x_full = sx == M * K, y_full = sy == K * N, c_full = sc == M * N;
  if (batch == 1 || (sx == 0 && sy == 0 && sc == 0)) {
    // One product; with everything shared, the sum over the batch is batch × that product.
    gemm(type, tx, ty, M, N, K, static_cast<float>(batch), X, ldx, Y, ldy, 0.0f, C, N, stream);
    return;
  }
  // Shared Y, untransposed X and batched C: the stacked X_i are one [batch·M, K] matrix.
  if (sy == 0 && !tx && x_full && c_full) {
    gemm(type, false, ty, batch * M, N, K, 1.0f, X, ldx, Y, ldy, 0.0f, C, N, stream);
    return;
  }
  // Summed C, transposed X, untransposed Y: Σ_i X_iᵀ Y_i is one GEMM over the stacked rows.
  if (sc == 0 && tx && !ty && x_full && y_full) {
    gemm(type, true, false, M, N, batch * K, 1.0f, X, ldx, Y, ldy, 0.0f, C, N, stream);
    return;
  }
  if (sc == 0) {
    // Accumulate into the one C in batch order (a strided batch writing one C would race).
    for (long long i = 0; i < batch; ++i)
      gemm(type, tx, ty, M, N, K, 1.0f, offset(X, i * sx, type), ldx, offset(Y, i * sy, type), ldy,
           i == 0 ? 0.0f : 1.0f, C, N, stream);
    return;
  }
  gemm_strided(type, batch, tx, ty, M, N, K, 1.0f, X, ldx, sx, Y, ldy, sy, 0.0f, C, N, sc, stream);
}

}  // namespace gattn::cuda
#endif
