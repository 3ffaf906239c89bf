// Helpers for the GPU suites: the skip when there is no device, and the check that runs one op
// graph on CPU tensors and on their CUDA copies and compares outputs and input gradients.
#pragma once
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/cuda/device.h"
#include "core/tensor/tensor.h"
#include "ops/cuda/runtime_info.h"
#ifdef GATTN_WITH_CUDA
#include "ops/cuda/gemm.h"
#endif
#include "test_util.h"

// Skips the test, saying why, in a CPU-only build or on a machine without a GPU.
#define GATTN_REQUIRE_DEVICE()                                               \
  do {                                                                       \
    if (!::gattn::cuda::compiled_in()) GTEST_SKIP() << "built without CUDA"; \
    if (!::gattn::cuda::available()) GTEST_SKIP() << "no CUDA device";       \
  } while (0)

namespace gattn::test {

// Bounds for comparing a CUDA result with the CPU's: |gpu − cpu| ≤ atol + rtol·|cpu|.
struct Tolerance {
  double atol = 1e-5;
  double rtol = 1e-5;
};

// Runs f on `inputs` (CPU tensors) and on their CUDA copies; compares the outputs, then
// back-propagates the same random output gradient through both graphs and compares the gradient of
// every floating input. Integer inputs (indices, masks) are copied but get no gradient.
inline ::testing::AssertionResult cuda_matches_cpu(const std::function<Tensor(const std::vector<Tensor>&)>& f,
                                                   const std::vector<Tensor>& inputs, Tolerance out_tol = {},
                                                   Tolerance grad_tol = {}, std::uint64_t grad_seed = 99) {
  std::vector<Tensor> cpu_in, gpu_in;
  for (const Tensor& x : inputs) {
    // detach(): a tensor of its own (its own .grad) even where to() returns an alias.
    Tensor c = x.clone(), g = x.to(Device::cuda).detach();
    if (x.dtype() != DType::i32) {
      c.set_requires_grad(true);
      g.set_requires_grad(true);
    }
    cpu_in.push_back(c);
    gpu_in.push_back(g);
  }
  Tensor y_cpu = f(cpu_in), y_gpu = f(gpu_in);
  if (y_gpu.device() != Device::cuda) return ::testing::AssertionFailure() << "the CUDA graph's output is on the CPU";
  if (auto r = all_close(y_gpu, y_cpu, out_tol.atol, out_tol.rtol); !r)
    return ::testing::AssertionFailure() << "output: " << r.message();
  Tensor go = rand(y_cpu.shape(), grad_seed, -1.0, 1.0, DType::f32);
  y_cpu.backward(go);
  y_gpu.backward(go.to(Device::cuda));
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].dtype() == DType::i32) continue;
    Tensor gc = cpu_in[i].grad(), gg = gpu_in[i].grad();
    if (!gc.defined() && !gg.defined()) continue;
    // An input the output does not depend on: one graph may leave its gradient undefined while
    // the other's fused backward writes zeros (the row entropy does not depend on v). Both say 0.
    if (gc.defined() != gg.defined()) {
      const Tensor& g = gc.defined() ? gc : gg;
      for (double x : g.to_vector())
        if (x != 0.0)
          return ::testing::AssertionFailure()
                 << "input " << i << ": gradient defined on one device only, and not zero";
      continue;
    }
    if (gg.device() != Device::cuda) return ::testing::AssertionFailure() << "input " << i << ": gradient left the GPU";
    if (auto r = all_close(gg, gc, grad_tol.atol, grad_tol.rtol); !r)
      return ::testing::AssertionFailure() << "gradient of input " << i << ": " << r.message();
  }
  return ::testing::AssertionSuccess();
}

// Turns TF32 off for the scope (exact f32 GEMMs), restoring the previous setting.
class ExactF32 {
 public:
#ifdef GATTN_WITH_CUDA
  ExactF32() : previous_(cuda::tf32_enabled()) { cuda::set_tf32_enabled(false); }
  ~ExactF32() { cuda::set_tf32_enabled(previous_); }

 private:
  bool previous_;
#else
  ~ExactF32() {}  // user-provided, so a guard object is not an "unused variable" in CPU-only builds
#endif
};

// f32 random tensor (the CUDA kernels compute in f32).
inline Tensor frand(const Shape& shape, std::uint64_t seed, double low = -1.0, double high = 1.0) {
  return rand(shape, seed, low, high, DType::f32);
}

// Bitwise equality of two tensors (any devices). The bytes, not the values: NaN never equals NaN,
// so comparing values failed every tensor holding one (the emulation build's first run found it).
inline bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const Tensor ha = a.to(Device::cpu), hb = b.to(Device::cpu);
  return std::memcmp(ha.raw_data(), hb.raw_data(), static_cast<std::size_t>(ha.numel()) * dtype_size(ha.dtype())) == 0;
}

}  // namespace gattn::test
