// cuBLASLt for linear's forward (see gemm_lt.h). cuBLASLt is column-major: the row-major y[rows,
// out] is the column-major D[out, rows] = op(A)·op(B) with A = W (stored [in, out] column-major,
// transposed) and B = x (stored [in, rows], not transposed), so the bias runs along D's rows as
// cuBLASLt's BIAS epilogue wants. Algorithms are chosen by cuBLASLt's heuristic once per problem
// (shape, types, epilogue, pointer alignment) and cached: the heuristic costs more than the call.
#ifdef GATTN_WITH_CUDA
#include "ops/cuda/gemm_lt.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>

#include "core/cuda/device_memory.h"
#include "core/cuda/error.h"

namespace gattn::cuda {

namespace {

constexpr std::size_t kWorkspaceBytes = 32u << 20;  // what cuBLAS itself reserves on Hopper

struct LtDevice {
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
};

LtDevice& lt_for_current_device() {
  static std::mutex mu;
  static std::map<int, LtDevice> devices;  // a map: references stay valid as devices are added
  int device = 0;
  GATTN_CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(mu);
  LtDevice& d = devices[device];
  if (!d.handle) {
    GATTN_CUBLAS_CHECK(cublasLtCreate(&d.handle));
    d.workspace = device_allocate(kWorkspaceBytes);  // kept for the process's life
  }
  return d;
}

// The largest power of two (≤ 256) dividing the address: what the heuristic may assume.
std::uint32_t alignment(const void* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  std::uint32_t align = 256;
  while (align > 1 && a % align != 0) align /= 2;
  return align;
}

// RAII for the descriptors of one call.
struct Descriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~Descriptors() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

template <class V>
void set_desc(cublasLtMatmulDesc_t op, cublasLtMatmulDescAttributes_t attr, const V& value) {
  GATTN_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, attr, &value, sizeof value));
}
template <class V>
void set_pref(cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t attr, const V& value) {
  GATTN_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(p, attr, &value, sizeof value));
}

// The cache key: everything the heuristic's answer depends on.
using ProblemKey = std::tuple<int, int, long long, long long, long long, int, bool, bool, std::uint32_t, std::uint32_t,
                              std::uint32_t, std::uint32_t>;

struct CachedAlgo {
  bool found = false;
  cublasLtMatmulAlgo_t algo{};
};

}  // namespace

bool linear_lt(GemmType type, long long rows, long long out, long long in, const void* x, const void* w,
               const LinearEpilogue& epi, float* y, CUstream_st* stream) {
  if (type == GemmType::bf16) return false;  // bf16 results: not a linear of this project
  if (rows <= 0 || out <= 0 || in <= 0 || rows > INT_MAX || out > INT_MAX || in > INT_MAX) return false;
  if (epi.gelu && (!epi.pre_gelu || out % 8 != 0)) return false;  // cuBLASLt: aux ld divisible by 8
  int device = 0;
  GATTN_CUDA_CHECK(cudaGetDevice(&device));
  LtDevice& lt = lt_for_current_device();

  const cudaDataType_t operand = type == GemmType::f32 ? CUDA_R_32F : CUDA_R_16BF;
  const cublasComputeType_t compute =
      type == GemmType::f32 && tf32_enabled() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  if (epi.gelu)
    epilogue = epi.bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX;
  else if (epi.bias)
    epilogue = CUBLASLT_EPILOGUE_BIAS;

  Descriptors desc;
  GATTN_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc.op, compute, CUDA_R_32F));
  set_desc(desc.op, CUBLASLT_MATMUL_DESC_TRANSA, static_cast<std::int32_t>(CUBLAS_OP_T));
  set_desc(desc.op, CUBLASLT_MATMUL_DESC_TRANSB, static_cast<std::int32_t>(CUBLAS_OP_N));
  set_desc(desc.op, CUBLASLT_MATMUL_DESC_EPILOGUE, static_cast<std::uint32_t>(epilogue));
  if (epi.bias) set_desc(desc.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, static_cast<const void*>(epi.bias));
  if (epi.gelu) {
    set_desc(desc.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, static_cast<void*>(epi.pre_gelu));
    set_desc(desc.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, static_cast<std::int64_t>(out));
  }
  // A = W: stored column-major [in, out], used transposed; B = x: [in, rows]; D = y: [out, rows].
  GATTN_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&desc.a, operand, static_cast<std::uint64_t>(in),
                                                static_cast<std::uint64_t>(out), in));
  GATTN_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&desc.b, operand, static_cast<std::uint64_t>(in),
                                                static_cast<std::uint64_t>(rows), in));
  GATTN_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&desc.d, CUDA_R_32F, static_cast<std::uint64_t>(out),
                                                static_cast<std::uint64_t>(rows), out));

  const std::uint32_t align_w = alignment(w), align_x = alignment(x), align_y = alignment(y);
  const std::uint32_t align_aux =
      std::min(epi.bias ? alignment(epi.bias) : 256u, epi.gelu ? alignment(epi.pre_gelu) : 256u);
  const ProblemKey key{device,
                       static_cast<int>(type),
                       rows,
                       out,
                       in,
                       static_cast<int>(compute),
                       epi.bias != nullptr,
                       epi.gelu,
                       align_w,
                       align_x,
                       align_y,
                       align_aux};
  static std::mutex cache_mu;
  static std::map<ProblemKey, CachedAlgo> cache;
  CachedAlgo chosen;
  {
    std::lock_guard<std::mutex> lock(cache_mu);
    auto it = cache.find(key);
    if (it != cache.end()) chosen = it->second;
  }
  if (!chosen.found && !cache.count(key)) {
    GATTN_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&desc.pref));
    set_pref(desc.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, static_cast<std::uint64_t>(kWorkspaceBytes));
    set_pref(desc.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align_w);
    set_pref(desc.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align_x);
    set_pref(desc.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align_y);
    set_pref(desc.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align_y);
    cublasLtMatmulHeuristicResult_t result{};
    int returned = 0;
    const cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(lt.handle, desc.op, desc.a, desc.b, desc.d, desc.d,
                                                            desc.pref, 1, &result, &returned);
    chosen.found = s == CUBLAS_STATUS_SUCCESS && returned > 0 && result.state == CUBLAS_STATUS_SUCCESS;
    if (chosen.found) chosen.algo = result.algo;
    std::lock_guard<std::mutex> lock(cache_mu);
    cache[key] = chosen;  // a miss is remembered too: no second heuristic query for it
  }
  if (!chosen.found) return false;

  const float alpha = 1.0f, beta = 0.0f;
  GATTN_CUBLAS_CHECK(cublasLtMatmul(lt.handle, desc.op, &alpha, w, desc.a, x, desc.b, &beta, y, desc.d, y, desc.d,
                                    &chosen.algo, lt.workspace, kWorkspaceBytes, stream));
  return true;
}

}  // namespace gattn::cuda
#endif
