// Generator: a Philox stream (seed, stream id, offset) that fills tensors reproducibly. Its state is
// three integers, so checkpoints can save it and the GPU can continue the same sequence.
#pragma once
#include <cstdint>

#include "core/tensor/tensor.h"

namespace gattn {

struct GeneratorState {
  std::uint64_t seed = 0;
  std::uint64_t stream = 0;
  std::uint64_t offset = 0;  // words consumed so far, always a multiple of 4
};

class Generator {
 public:
  explicit Generator(std::uint64_t seed = 0, std::uint64_t stream = 0) : state_{seed, stream, 0} {}

  const GeneratorState& state() const { return state_; }
  void set_state(const GeneratorState& s) { state_ = s; }

  // Reserves n words of the stream and returns the offset where they start. Offsets are rounded up
  // to whole Philox blocks so a later draw never reuses a word.
  std::uint64_t reserve(std::uint64_t n);

  // In-place fills of a floating tensor (f32/f64/bf16) on the CPU.
  void uniform_(Tensor& t, double low = 0.0, double high = 1.0);
  void normal_(Tensor& t, double mean = 0.0, double std = 1.0);
  // Standard logistic noise ln u − ln(1 − u), u uniform in (0, 1): the noise of gumbel_sigmoid.
  void logistic_(Tensor& t);
  // Uniform integers in [0, n) into an i32 tensor (n <= 2^24 keeps them exactly uniform enough).
  void randint_(Tensor& t, std::int64_t n);

  // One uniform float in [0, 1), for samplers that draw scalars.
  double next_uniform();

 private:
  GeneratorState state_;
};

}  // namespace gattn
