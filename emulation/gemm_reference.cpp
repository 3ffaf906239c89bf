// The emulated libraries' GEMM (see gemm_reference.h).
#include "emulation/gemm_reference.h"

#include <cblas.h>

#include <cstring>
#include <vector>

#include "core/tensor/bf16.h"
#include "emulation/device_arena.h"

namespace gattn::emu {

namespace {

std::size_t elem_size(cudaDataType t) { return t == CUDA_R_16BF ? 2 : 4; }

// Rows and columns of the stored matrix (before op).
void stored_dims(const GemmOperand& x, long long op_rows, long long op_cols, long long& rows, long long& cols) {
  rows = x.transposed ? op_cols : op_rows;
  cols = x.transposed ? op_rows : op_cols;
}

// Bytes from the first to one past the last element of a column-major rows×cols matrix.
std::size_t span_bytes(long long rows, long long cols, long long ld, cudaDataType t) {
  if (rows <= 0 || cols <= 0) return 0;
  return static_cast<std::size_t>((cols - 1) * ld + rows) * elem_size(t);
}

float tf32_round(float x) {
  // Round to nearest even on the 13 mantissa bits TF32 drops; inf and NaN pass through.
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) == 0x7f800000u) return x;
  u += 0xfffu + ((u >> 13) & 1u);
  u &= ~0x1fffu;
  std::memcpy(&x, &u, 4);
  return x;
}

// The stored matrix widened to f32, same layout (ld kept).
std::vector<float> widen(const GemmOperand& x, long long rows, long long cols, bool tf32) {
  std::vector<float> out(static_cast<std::size_t>(cols > 0 ? (cols - 1) * x.ld + rows : 0));
  for (long long c = 0; c < cols; ++c)
    for (long long r = 0; r < rows; ++r) {
      const std::size_t i = static_cast<std::size_t>(c * x.ld + r);
      float v = x.type == CUDA_R_16BF ? bf16_to_float(bf16{static_cast<const std::uint16_t*>(x.data)[i]})
                                      : static_cast<const float*>(x.data)[i];
      out[i] = tf32 ? tf32_round(v) : v;
    }
  return out;
}

}  // namespace

std::string check_gemm(const GemmProblem& p) {
  if (p.m < 0 || p.n < 0 || p.k < 0) return "negative dimension";
  long long ar, ac, br, bc;
  stored_dims(p.a, p.m, p.k, ar, ac);
  stored_dims(p.b, p.k, p.n, br, bc);
  if (p.a.ld < std::max(1LL, ar)) return "lda " + std::to_string(p.a.ld) + " < rows of A " + std::to_string(ar);
  if (p.b.ld < std::max(1LL, br)) return "ldb " + std::to_string(p.b.ld) + " < rows of B " + std::to_string(br);
  if (p.ldc < std::max(1LL, p.m)) return "ldc " + std::to_string(p.ldc) + " < rows of C " + std::to_string(p.m);
  const bool f32 = p.a.type == CUDA_R_32F && p.b.type == CUDA_R_32F && p.c_type == CUDA_R_32F;
  const bool bf16 =
      p.a.type == CUDA_R_16BF && p.b.type == CUDA_R_16BF && (p.c_type == CUDA_R_16BF || p.c_type == CUDA_R_32F);
  if (!f32 && !bf16) return "unsupported type combination";
  std::string why;
  if (p.m > 0 && p.n > 0 && p.k > 0) {
    if (!device_accessible_range(p.a.data, span_bytes(ar, ac, p.a.ld, p.a.type), why)) return "A: " + why;
    if (!device_accessible_range(p.b.data, span_bytes(br, bc, p.b.ld, p.b.type), why)) return "B: " + why;
  }
  if (p.m > 0 && p.n > 0 && !device_accessible_range(p.c, span_bytes(p.m, p.n, p.ldc, p.c_type), why))
    return "C: " + why;
  return "";
}

void run_gemm(const GemmProblem& p) {
  if (p.m == 0 || p.n == 0) return;
  long long ar, ac, br, bc;
  stored_dims(p.a, p.m, p.k, ar, ac);
  stored_dims(p.b, p.k, p.n, br, bc);
  std::vector<float> c(static_cast<std::size_t>((p.n - 1) * p.ldc + p.m), 0.0f);
  const bool c_bf16 = p.c_type == CUDA_R_16BF;
  if (p.beta != 0.0f)
    for (long long j = 0; j < p.n; ++j)
      for (long long i = 0; i < p.m; ++i) {
        const std::size_t x = static_cast<std::size_t>(j * p.ldc + i);
        c[x] =
            c_bf16 ? bf16_to_float(bf16{static_cast<const std::uint16_t*>(p.c)[x]}) : static_cast<const float*>(p.c)[x];
      }
  if (p.k > 0) {
    const std::vector<float> a = widen(p.a, ar, ac, p.tf32), b = widen(p.b, br, bc, p.tf32);
    cblas_sgemm(CblasColMajor, p.a.transposed ? CblasTrans : CblasNoTrans, p.b.transposed ? CblasTrans : CblasNoTrans,
                static_cast<int>(p.m), static_cast<int>(p.n), static_cast<int>(p.k), p.alpha, a.data(),
                static_cast<int>(p.a.ld), b.data(), static_cast<int>(p.b.ld), p.beta, c.data(),
                static_cast<int>(p.ldc));
  } else {
    for (float& x : c) x *= p.beta;
  }
  for (long long j = 0; j < p.n; ++j)
    for (long long i = 0; i < p.m; ++i) {
      const std::size_t x = static_cast<std::size_t>(j * p.ldc + i);
      if (c_bf16)
        static_cast<std::uint16_t*>(p.c)[x] = float_to_bf16(c[x]).bits;
      else
        static_cast<float*>(p.c)[x] = c[x];
    }
}

}  // namespace gattn::emu
