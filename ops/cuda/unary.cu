// CUDA elementwise functions: the formulas of ops/cpu/unary.h (see there for the derivations),
// in f32 with the accurate CUDA math functions (expf, tanhf) rather than fast intrinsics, so the
// results stay within a few ulp of the CPU kernels.
#include <cuda_runtime.h>

#include "core/cuda/launch.cuh"
#include "ops/cuda/unary.h"

namespace gattn::cuda {

namespace {

constexpr float kGeluC = 0.7978845608028654f;  // √(2/π)
constexpr float kGeluA = 0.044715f;

template <UnaryOp Op>
__device__ inline float forward(float x) {
  if constexpr (Op == UnaryOp::exp) return expf(x);
  if constexpr (Op == UnaryOp::log) return logf(x);
  if constexpr (Op == UnaryOp::tanh) return tanhf(x);
  if constexpr (Op == UnaryOp::sigmoid) {
    const float e = expf(-fabsf(x));
    const float r = 1.0f / (1.0f + e);
    return x >= 0.0f ? r : e * r;
  }
  if constexpr (Op == UnaryOp::log_sigmoid) return fminf(x, 0.0f) - log1pf(expf(-fabsf(x)));
  if constexpr (Op == UnaryOp::relu) return x < 0.0f ? 0.0f : x;
  if constexpr (Op == UnaryOp::gelu) {
    const float t = tanhf(kGeluC * (x + kGeluA * x * x * x));
    return 0.5f * x * (1.0f + t);
  }
  if constexpr (Op == UnaryOp::square) return x * x;
  if constexpr (Op == UnaryOp::sqrt) return sqrtf(x);
  if constexpr (Op == UnaryOp::heaviside) return x > 0.0f ? 1.0f : (x <= 0.0f ? 0.0f : x);
}

// s is the saved input (log, log_sigmoid, relu, gelu, square, heaviside) or output (exp, tanh, sigmoid, sqrt).
template <UnaryOp Op>
__device__ inline float backward(float g, float s) {
  if constexpr (Op == UnaryOp::exp) return g * s;
  if constexpr (Op == UnaryOp::log) return g / s;
  if constexpr (Op == UnaryOp::tanh) return g * (1.0f - s * s);
  if constexpr (Op == UnaryOp::sigmoid) return g * s * (1.0f - s);
  if constexpr (Op == UnaryOp::log_sigmoid) {
    const float e = expf(-fabsf(s));
    const float r = 1.0f / (1.0f + e);
    return g * (s >= 0.0f ? e * r : r);
  }
  if constexpr (Op == UnaryOp::relu) return s > 0.0f ? g : 0.0f;
  if constexpr (Op == UnaryOp::gelu) {
    const float x2 = s * s;
    const float t = tanhf(kGeluC * (s + kGeluA * x2 * s));
    const float du = kGeluC * (1.0f + 3.0f * kGeluA * x2);
    return g * (0.5f * (1.0f + t) + 0.5f * s * (1.0f - t * t) * du);
  }
  if constexpr (Op == UnaryOp::square) return 2.0f * g * s;
  if constexpr (Op == UnaryOp::sqrt) return g / (2.0f * s);
  if constexpr (Op == UnaryOp::heaviside) return 0.0f;  // g and s do not enter: a threshold has no gradient
}

template <UnaryOp Op>
__global__ void forward_kernel(const float* x, float* y, long long n) {
  GATTN_GRID_STRIDE(i, n) y[i] = forward<Op>(x[i]);
}

template <UnaryOp Op>
__global__ void backward_kernel(const float* g, const float* s, float* dx, long long n) {
  GATTN_GRID_STRIDE(i, n) dx[i] = backward<Op>(g[i], s[i]);
}

// Calls fn.template operator()<Op>() for the runtime op.
template <class Fn>
void with_op(UnaryOp op, Fn&& fn) {
  switch (op) {
    case UnaryOp::exp:
      fn.template operator()<UnaryOp::exp>();
      break;
    case UnaryOp::log:
      fn.template operator()<UnaryOp::log>();
      break;
    case UnaryOp::tanh:
      fn.template operator()<UnaryOp::tanh>();
      break;
    case UnaryOp::sigmoid:
      fn.template operator()<UnaryOp::sigmoid>();
      break;
    case UnaryOp::log_sigmoid:
      fn.template operator()<UnaryOp::log_sigmoid>();
      break;
    case UnaryOp::relu:
      fn.template operator()<UnaryOp::relu>();
      break;
    case UnaryOp::gelu:
      fn.template operator()<UnaryOp::gelu>();
      break;
    case UnaryOp::square:
      fn.template operator()<UnaryOp::square>();
      break;
    case UnaryOp::sqrt:
      fn.template operator()<UnaryOp::sqrt>();
      break;
    case UnaryOp::heaviside:
      fn.template operator()<UnaryOp::heaviside>();
      break;
  }
}

struct LaunchForward {
  const float* x;
  float* y;
  long long n;
  cudaStream_t s;
  template <UnaryOp Op>
  void operator()() const {
    launch(forward_kernel<Op>, grid_for(n), kThreads, 0, s, x, y, n);
  }
};

struct LaunchBackward {
  const float* g;
  const float* saved;
  float* dx;
  long long n;
  cudaStream_t s;
  template <UnaryOp Op>
  void operator()() const {
    launch(backward_kernel<Op>, grid_for(n), kThreads, 0, s, g, saved, dx, n);
  }
};

}  // namespace

void unary_forward_f32(UnaryOp op, const float* x, float* y, long long n, CUstream_st* stream) {
  if (n <= 0) return;
  with_op(op, LaunchForward{x, y, n, stream});
  GATTN_CUDA_LAUNCH_CHECK("unary forward_kernel");
}

void unary_backward_f32(UnaryOp op, const float* g, const float* saved, float* dx, long long n, CUstream_st* stream) {
  if (n <= 0) return;
  with_op(op, LaunchBackward{g, saved, dx, n, stream});
  GATTN_CUDA_LAUNCH_CHECK("unary backward_kernel");
}

}  // namespace gattn::cuda
