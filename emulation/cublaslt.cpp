// The cuBLASLt calls gattn makes (linear's forward with its bias and GELU epilogues), over the
// emulated device. The heuristic always offers one algorithm; the epilogues are applied to D after
// the GEMM with cuBLASLt's documented semantics: BIAS adds bias[i] to row i of D, GELU_AUX(_BIAS)
// stores the pre-activation (after the bias) to the aux matrix and D = GELU_tanh(pre). cuBLASLt's
// own GELU runs in hardware approximations; this one is exact f32, so the GPU test's tolerance, not
// this file, must account for the difference.
#include <cublasLt.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "emulation/device_arena.h"
#include "emulation/gemm_reference.h"
#include "emulation/runtime_state.h"

struct cublasLtContext {};

namespace {

struct MatmulDesc {
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cudaDataType_t scale = CUDA_R_32F;
  std::int32_t trans_a = CUBLAS_OP_N, trans_b = CUBLAS_OP_N;
  std::uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;
  void* aux = nullptr;
  std::int64_t aux_ld = 0;
};

struct Layout {
  cudaDataType type = CUDA_R_32F;
  std::uint64_t rows = 0, cols = 0;
  std::int64_t ld = 0;
};

struct Preference {};

MatmulDesc* desc(cublasLtMatmulDesc_t d) { return reinterpret_cast<MatmulDesc*>(d); }
Layout* layout(cublasLtMatrixLayout_t l) { return reinterpret_cast<Layout*>(l); }

cublasStatus_t refuse(cublasStatus_t s, const std::string& why) {
  std::fprintf(stderr, "gattn CUDA emulation: cuBLASLt: %s\n", why.c_str());
  return s;
}

template <class T>
cublasStatus_t read_attr(T& out, const void* buf, size_t size) {
  if (size != sizeof(T)) return CUBLAS_STATUS_INVALID_VALUE;
  std::memcpy(&out, buf, sizeof(T));
  return CUBLAS_STATUS_SUCCESS;
}

float gelu_tanh(float x) {
  const float k = 0.7978845608028654f;  // √(2/π)
  return 0.5f * x * (1.0f + std::tanh(k * (x + 0.044715f * x * x * x)));
}

bool supported_epilogue(std::uint32_t e) {
  return e == CUBLASLT_EPILOGUE_DEFAULT || e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_GELU_AUX ||
         e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
}

}  // namespace

cublasStatus_t cublasLtCreate(cublasLtHandle_t* h) {
  *h = new cublasLtContext;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t h) {
  delete h;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* d, cublasComputeType_t compute, cudaDataType_t scale) {
  auto* m = new MatmulDesc;
  m->compute = compute;
  m->scale = scale;
  *d = reinterpret_cast<cublasLtMatmulDesc_t>(m);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) {
  delete desc(d);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr,
                                              const void* buf, size_t size) {
  MatmulDesc& m = *desc(d);
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_TRANSA:
      return read_attr(m.trans_a, buf, size);
    case CUBLASLT_MATMUL_DESC_TRANSB:
      return read_attr(m.trans_b, buf, size);
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
      return read_attr(m.epilogue, buf, size);
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
      return read_attr(m.bias, buf, size);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER:
      return read_attr(m.aux, buf, size);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD:
      return read_attr(m.aux_ld, buf, size);
    default:
      return refuse(CUBLAS_STATUS_NOT_SUPPORTED,
                    "matmul descriptor attribute " + std::to_string(attr) + " is not emulated");
  }
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* l, cudaDataType type, uint64_t rows, uint64_t cols,
                                          int64_t ld) {
  *l = reinterpret_cast<cublasLtMatrixLayout_t>(new Layout{type, rows, cols, ld});
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) {
  delete layout(l);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* p) {
  *p = reinterpret_cast<cublasLtMatmulPreference_t>(new Preference);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) {
  delete reinterpret_cast<Preference*>(p);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t,
                                                    const void*, size_t) {
  return CUBLAS_STATUS_SUCCESS;  // workspace and alignment limits: the emulated GEMM needs neither
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t, cublasLtMatmulDesc_t d, cublasLtMatrixLayout_t,
                                              cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t Dl,
                                              cublasLtMatmulPreference_t, int requested,
                                              cublasLtMatmulHeuristicResult_t results[], int* returned) {
  *returned = 0;
  if (requested < 1) return CUBLAS_STATUS_INVALID_VALUE;
  const MatmulDesc& m = *desc(d);
  // What real cuBLASLt refuses, so the caller's fallback runs here too: an unknown epilogue, and a
  // GELU aux matrix whose leading dimension is not a multiple of 8.
  if (!supported_epilogue(m.epilogue)) return CUBLAS_STATUS_NOT_SUPPORTED;
  const bool gelu = m.epilogue == CUBLASLT_EPILOGUE_GELU_AUX || m.epilogue == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
  if (gelu && (m.aux_ld % 8 != 0 || m.aux_ld < static_cast<std::int64_t>(layout(Dl)->rows)))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  std::memset(&results[0], 0, sizeof results[0]);
  results[0].state = CUBLAS_STATUS_SUCCESS;
  results[0].wavesCount = 1.0f;
  *returned = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t d, const void* alpha, const void* A,
                              cublasLtMatrixLayout_t Al, const void* B, cublasLtMatrixLayout_t Bl, const void* beta,
                              const void* C, cublasLtMatrixLayout_t Cl, void* D, cublasLtMatrixLayout_t Dl,
                              const cublasLtMatmulAlgo_t*, void*, size_t, cudaStream_t stream) {
  if (!h) return refuse(CUBLAS_STATUS_NOT_INITIALIZED, "null handle");
  if (!gattn::emu::valid_stream(stream)) return refuse(CUBLAS_STATUS_INVALID_VALUE, "invalid or destroyed stream");
  gattn::emu::queue_work(stream);
  const MatmulDesc& m = *desc(d);
  const Layout &a = *layout(Al), &b = *layout(Bl), &c = *layout(Cl), &dl = *layout(Dl);
  if (m.scale != CUDA_R_32F) return refuse(CUBLAS_STATUS_NOT_SUPPORTED, "scale type not emulated");
  if (!supported_epilogue(m.epilogue)) return refuse(CUBLAS_STATUS_NOT_SUPPORTED, "epilogue not emulated");
  const float beta_v = *static_cast<const float*>(beta);
  if (C != D && beta_v != 0.0f)
    return refuse(CUBLAS_STATUS_NOT_SUPPORTED, "C distinct from D with beta != 0 is not emulated");
  if (c.rows != dl.rows || c.cols != dl.cols || c.type != dl.type || c.ld != dl.ld)
    return refuse(CUBLAS_STATUS_INVALID_VALUE, "C and D layouts differ");
  gattn::emu::GemmProblem p;
  p.tf32 = m.compute == CUBLAS_COMPUTE_32F_FAST_TF32;
  if (m.compute != CUBLAS_COMPUTE_32F && !p.tf32)
    return refuse(CUBLAS_STATUS_NOT_SUPPORTED, "compute type not emulated");
  const bool ta = m.trans_a != CUBLAS_OP_N, tb = m.trans_b != CUBLAS_OP_N;
  p.m = static_cast<long long>(dl.rows);
  p.n = static_cast<long long>(dl.cols);
  p.k = static_cast<long long>(ta ? a.rows : a.cols);
  const long long a_m = static_cast<long long>(ta ? a.cols : a.rows);
  const long long b_k = static_cast<long long>(tb ? b.cols : b.rows),
                  b_n = static_cast<long long>(tb ? b.rows : b.cols);
  if (a_m != p.m || b_k != p.k || b_n != p.n)
    return refuse(CUBLAS_STATUS_INVALID_VALUE, "layouts do not multiply: op(A) " + std::to_string(a_m) + "x" +
                                                   std::to_string(p.k) + ", op(B) " + std::to_string(b_k) + "x" +
                                                   std::to_string(b_n) + ", D " + std::to_string(p.m) + "x" +
                                                   std::to_string(p.n));
  p.a = {A, a.type, a.ld, ta};
  p.b = {B, b.type, b.ld, tb};
  p.c = D;
  p.c_type = dl.type;
  p.ldc = dl.ld;
  p.alpha = *static_cast<const float*>(alpha);
  p.beta = beta_v;
  if (const std::string why = gattn::emu::check_gemm(p); !why.empty()) return refuse(CUBLAS_STATUS_INVALID_VALUE, why);
  const bool bias = m.epilogue == CUBLASLT_EPILOGUE_BIAS || m.epilogue == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
  const bool gelu = m.epilogue == CUBLASLT_EPILOGUE_GELU_AUX || m.epilogue == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
  if (dl.type != CUDA_R_32F && (bias || gelu))
    return refuse(CUBLAS_STATUS_NOT_SUPPORTED, "epilogues on a non-f32 D are not emulated");
  std::string why;
  if (bias && !gattn::emu::device_accessible_range(m.bias, static_cast<std::size_t>(p.m) * 4, why))
    return refuse(CUBLAS_STATUS_INVALID_VALUE, "bias: " + why);
  if (gelu) {
    if (m.aux_ld < p.m || m.aux_ld % 8 != 0)
      return refuse(CUBLAS_STATUS_INVALID_VALUE, "aux leading dimension must be >= rows and a multiple of 8");
    if (!gattn::emu::device_accessible_range(m.aux, static_cast<std::size_t>((p.n - 1) * m.aux_ld + p.m) * 4, why))
      return refuse(CUBLAS_STATUS_INVALID_VALUE, "aux: " + why);
  }
  gattn::emu::DeviceAccess access;
  gattn::emu::run_gemm(p);
  if (!bias && !gelu) return CUBLAS_STATUS_SUCCESS;
  auto* out = static_cast<float*>(D);
  const auto* bias_v = static_cast<const float*>(m.bias);
  auto* aux = static_cast<float*>(m.aux);
  for (long long j = 0; j < p.n; ++j)
    for (long long i = 0; i < p.m; ++i) {
      float& v = out[j * p.ldc + i];
      if (bias) v += bias_v[i];
      if (gelu) {
        aux[j * m.aux_ld + i] = v;
        v = gelu_tanh(v);
      }
    }
  return CUBLAS_STATUS_SUCCESS;
}
