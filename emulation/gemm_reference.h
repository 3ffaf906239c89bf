// The one GEMM behind the emulated cuBLAS and cuBLASLt: column-major C = alpha·op(A)·op(B) + beta·C
// with cuBLAS's argument conventions (leading dimensions, transposes, element types), computed by
// OpenBLAS in f32. Operands in bf16 widen exactly; with TF32 compute the f32 operands are first
// rounded to TF32 (10 mantissa bits) as the tensor cores do, so emulated results carry the same
// error the GPU tests' tolerances must allow.
#pragma once
#include <library_types.h>

#include <cstdint>
#include <string>

namespace gattn::emu {

struct GemmOperand {
  const void* data = nullptr;
  cudaDataType type = CUDA_R_32F;
  long long ld = 0;
  bool transposed = false;
};

struct GemmProblem {
  long long m = 0, n = 0, k = 0;  // op(A) is m×k, op(B) k×n, C m×n
  GemmOperand a, b;
  void* c = nullptr;
  cudaDataType c_type = CUDA_R_32F;
  long long ldc = 0;
  float alpha = 1, beta = 0;
  bool tf32 = false;
};

// Checks the problem as cuBLAS does (dimensions, leading dimensions, supported type combinations)
// and that every matrix lies inside device memory; returns "" or what is wrong.
std::string check_gemm(const GemmProblem& p);
// Runs a checked problem. The caller holds DeviceAccess.
void run_gemm(const GemmProblem& p);

}  // namespace gattn::emu
