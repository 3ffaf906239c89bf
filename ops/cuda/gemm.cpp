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

// The operands of C_i = alpha op(A_i) op(B_i) + beta C_i for i < batch, A_i = A + i·stride_a elements
// etc. (batch 1: a plain GEMM; strides then unused). The defaults are one f32 product C = A·B on the
// default stream; sizes, pointers and leading dimensions have none worth having, so name them.
struct GemmArgs {
  GemmType type = GemmType::f32;
  long long batch = 1;
  bool trans_a = false, trans_b = false;
  long long M = 0, N = 0, K = 0;
  float alpha = 1.0f;
  const void* A = nullptr;
  long long lda = 0, stride_a = 0;
  const void* B = nullptr;
  long long ldb = 0, stride_b = 0;
  float beta = 0.0f;
  void* C = nullptr;
  long long ldc = 0, stride_c = 0;
  CUstream_st* stream = nullptr;
};

void gemm_strided(const GemmArgs& g) {
  if (g.batch <= 0 || g.M <= 0 || g.N <= 0) return;
  if (g.K == 0) {
    // An empty inner sum: make C = beta·C ourselves (only beta 0 occurs; scale by a GEMM otherwise is not needed).
    if (g.beta != 0.0f) return;  // beta·C + 0 with beta = 1 leaves C as it is
    for (long long i = 0; i < (g.stride_c == 0 ? 1 : g.batch); ++i)
      for (long long r = 0; r < g.M; ++r)
        GATTN_CUDA_CHECK(cudaMemsetAsync(
            static_cast<char*>(g.C) + static_cast<std::size_t>(i * g.stride_c + r * g.ldc) * result_size(g.type), 0,
            static_cast<std::size_t>(g.N) * result_size(g.type), g.stream));
    return;
  }
  cublasHandle_t h = handle_for_current_device();
  GATTN_CUBLAS_CHECK(cublasSetStream(h, g.stream));
  const cublasOperation_t op_b = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, op_a = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int m = dim32(g.N, "N"), n = dim32(g.M, "M"), k = dim32(g.K, "K");
  const int la = dim32(g.lda, "lda"), lb = dim32(g.ldb, "ldb"), lc = dim32(g.ldc, "ldc");
  const cudaDataType_t dt = operand_type(g.type), ctype = result_type(g.type);
  const cublasComputeType_t ct = compute_type(g.type);
  if (g.batch == 1) {
    GATTN_CUBLAS_CHECK(cublasGemmEx(h, op_b, op_a, m, n, k, &g.alpha, g.B, dt, lb, g.A, dt, la, &g.beta, g.C, ctype, lc,
                                    ct, CUBLAS_GEMM_DEFAULT));
  } else {
    GATTN_CUBLAS_CHECK(cublasGemmStridedBatchedEx(h, op_b, op_a, m, n, k, &g.alpha, g.B, dt, lb, g.stride_b, g.A, dt,
                                                  la, g.stride_a, &g.beta, g.C, ctype, lc, g.stride_c,
                                                  dim32(g.batch, "batch"), ct, CUBLAS_GEMM_DEFAULT));
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
  gemm_strided({.type = type,
                .trans_a = trans_a,
                .trans_b = trans_b,
                .M = M,
                .N = N,
                .K = K,
                .alpha = alpha,
                .A = A,
                .lda = lda,
                .B = B,
                .ldb = ldb,
                .beta = beta,
                .C = C,
                .ldc = ldc,
                .stream = stream});
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
  gemm_strided({.type = type,
                .batch = batch,
                .trans_a = tx,
                .trans_b = ty,
                .M = M,
                .N = N,
                .K = K,
                .A = X,
                .lda = ldx,
                .stride_a = sx,
                .B = Y,
                .ldb = ldy,
                .stride_b = sy,
                .C = C,
                .ldc = N,
                .stride_c = sc,
                .stream = stream});
}

}  // namespace gattn::cuda
#endif
