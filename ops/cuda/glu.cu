// Fused CUDA gated linear units: one thread per element (grid-stride), the element math of
// ops/glu_element.h as the CPU kernel uses it; the activation is a template parameter, chosen once
// per launch.
#include <cuda_runtime.h>

#include "core/cuda/launch.cuh"
#include "ops/cuda/glu.h"

namespace gattn::cuda {

namespace {

template <glu::Activation A>
__global__ void forward_kernel(const float* gate, const float* up, float* y, long long n) {
  GATTN_GRID_STRIDE(i, n) y[i] = glu::forward<A>(gate[i], up[i]);
}

template <glu::Activation A>
__global__ void backward_kernel(const float* gate, const float* up, const float* g, float* dgate, float* dup,
                                long long n) {
  GATTN_GRID_STRIDE(i, n) {
    float da, du;
    glu::backward<A>(gate[i], up[i], g[i], da, du);
    if (dgate) dgate[i] = da;
    if (dup) dup[i] = du;
  }
}

}  // namespace

void glu_forward_f32(glu::Activation act, const float* gate, const float* up, float* y, long long n,
                     CUstream_st* stream) {
  if (n <= 0) return;
  if (act == glu::Activation::silu)
    launch(forward_kernel<glu::Activation::silu>, grid_for(n), kThreads, 0, stream, gate, up, y, n);
  else
    launch(forward_kernel<glu::Activation::sigmoid>, grid_for(n), kThreads, 0, stream, gate, up, y, n);
  GATTN_CUDA_LAUNCH_CHECK("glu forward_kernel");
}

void glu_backward_f32(glu::Activation act, const float* gate, const float* up, const float* g, float* dgate, float* dup,
                      long long n, CUstream_st* stream) {
  if (n <= 0 || (!dgate && !dup)) return;
  if (act == glu::Activation::silu)
    launch(backward_kernel<glu::Activation::silu>, grid_for(n), kThreads, 0, stream, gate, up, g, dgate, dup, n);
  else
    launch(backward_kernel<glu::Activation::sigmoid>, grid_for(n), kThreads, 0, stream, gate, up, g, dgate, dup, n);
  GATTN_CUDA_LAUNCH_CHECK("glu backward_kernel");
}

}  // namespace gattn::cuda
