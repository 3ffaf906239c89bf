// 8-bit gates at inference ([GatedAttn-Repro] §7, docs/gates.md#references): every gate's projection
// weights rounded to int8 with one scale per output channel (row), s_r = max_j |W_rj| / 127 and
// W_rj ← s_r · clamp(round(W_rj / s_r), −127, 127), so the model then runs with exactly the values an
// int8 store of those weights would give back. What the gates compute stays in the model's dtype:
// the point is what the rounding costs the loss and what the store would save, for every kind.
#pragma once
#include <cstdint>

#include "models/gpt.h"

namespace gattn::models {

struct GateQuantization {
  std::int64_t tensors = 0;      // gate weight matrices rounded
  std::int64_t values = 0;       // their values
  std::int64_t rows = 0;         // their output channels, one f32 scale each
  std::int64_t bytes_f32 = 0;    // 4 · values: the weights as stored now (f32)
  std::int64_t bytes_int8 = 0;   // values + 4 · rows: int8 values and their scales
  double max_abs_error = 0;      // max |W − s·q| over every rounded value (≤ s_r / 2 per row)
  std::int64_t model_bytes = 0;  // 4 · every parameter of the model, for the share the gates are
};

// Rounds the gate weights of `model` in place: for each configured gate (every block and site it
// sits in; gate_parameter_prefix names where), each of its parameters with two dimensions — the
// projections (`weight`, `magnitude_weight`), the pair gate's `wq`/`wk` and the router's `weight`.
// Biases, α and every non-gate parameter keep their bits. Throws ValueError naming `--gate-int8`
// when the model has no gate weights to round (no gates, or none with a matrix).
GateQuantization quantize_gate_weights_int8(GPT& model);

}  // namespace gattn::models
