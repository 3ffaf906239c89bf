// Fused multi-tensor AdamW on the GPU (ops/cuda/adamw.cu): one launch updates many parameters,
// each with its own coefficients, so parameter groups (per-group lr, weight decay) and per-parameter
// step counts (bias correction after a freeze) are honoured; a frozen group is simply left out of
// the list. The update is framework/optim/adamw.cpp's, element for element:
//   m = β1 m + (1−β1) g;  v = β2 v + (1−β2) g²;  p = p·decay − step_size · m / (√v · inv_sqrt_bc2 + eps)
// computed with round-to-nearest operations and no fused multiply-adds, as the CPU loop does, so
// the results match the CPU update. f32 device pointers; CUDA builds only.
#pragma once
#include <vector>

struct CUstream_st;

namespace gattn::cuda {

struct AdamWTensor {
  float* p;
  const float* g;
  float* m;
  float* v;
  long long n;
  // Per tensor, from its group and its own step t (computed in double, rounded to f32 as the CPU does):
  float decay;         // 1 − lr·wd
  float step_size;     // lr / (1 − β1ᵗ)
  float inv_sqrt_bc2;  // 1 / √(1 − β2ᵗ)
};

struct AdamWHyper {
  float beta1, beta2, one_minus_beta1, one_minus_beta2, eps;
};

// Updates every listed tensor in place (a few launches of up to kAdamWTensorsPerLaunch tensors).
void adamw_multi_tensor_f32(const std::vector<AdamWTensor>& tensors, const AdamWHyper& hyper, CUstream_st* stream);

}  // namespace gattn::cuda
