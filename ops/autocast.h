// Mixed precision as a scope, in the manner of PyTorch's autocast: while an AutocastScope with
// bf16 is alive on this thread, the ops that pay for it (linear, matmul, flash_attention) take f32
// tensors on the GPU, run their products on bf16 tensor cores with f32 accumulation, and hand back
// f32 results and f32 gradients. Everything else (elementwise, LayerNorm, softmax, the loss, every
// reduction) stays f32, and the weights the optimizer updates stay f32 (the master copy); the bf16
// operands are transient copies made inside the op. CPU tensors ignore the scope.
//
// The trainer opens the scope around forward and backward when train.precision is bf16.
#pragma once

namespace gattn::ops {

enum class ComputePrecision { fp32, bf16 };

// The precision of the innermost live scope on this thread (fp32 without one).
ComputePrecision autocast_precision();
inline bool autocast_bf16() { return autocast_precision() == ComputePrecision::bf16; }

class AutocastScope {
 public:
  explicit AutocastScope(ComputePrecision p);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  ComputePrecision saved_;
};

}  // namespace gattn::ops
