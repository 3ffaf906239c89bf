// Fused multi-tensor AdamW on the GPU (ops/cuda/adamw.cu): one launch updates many parameters,
// each with its own coefficients, so parameter groups (per-group lr, weight decay) and per-parameter
// step counts (bias correction after a freeze) are honoured; a frozen group is simply left out of
// the list. Each element is updated by adamw::update (ops/adamw_element.h), the CPU kernel's own
// function, so the two devices agree bit for bit. f32 device pointers; CUDA builds only.
#pragma once
#include <vector>

#include "ops/adamw_element.h"

struct CUstream_st;

namespace gattn::cuda {

struct AdamWTensor {
  float* p;
  const float* g;
  float* m;
  float* v;
  long long n;
  adamw::Coeffs<float> c;  // from its group and its own step t
};

// Updates every listed tensor in place (a few launches of up to kAdamWTensorsPerLaunch tensors).
void adamw_multi_tensor_f32(const std::vector<AdamWTensor>& tensors, const adamw::Hyper<float>& hyper,
                            CUstream_st* stream);

}  // namespace gattn::cuda
