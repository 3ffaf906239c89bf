// The model's configuration (SPEC §4 `model.*`): sizes and the gate. Validated here so every
// caller (training, inspect, tests) gets the same clear errors; serialised as JSON for checkpoint
// metadata.
#pragma once
#include <cstdint>
#include <limits>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "framework/tensor/dtype.h"

namespace gattn::models {

// The gate kinds of SPEC §4.
enum class GateKind { none, output, score, forget, pair, context, routed };
const char* gate_kind_name(GateKind k);
// Parses a kind name; throws ValueError listing the valid names.
GateKind parse_gate_kind(const std::string& name);

struct GateConfig {
  GateKind kind = GateKind::none;
  std::string granularity = "elementwise";  // output: elementwise | headwise
  bool all_layers = true;                   // `layers: all`
  std::vector<std::int64_t> layers;         // block indices when not all_layers
  std::string activation = "sigmoid";       // sigmoid | gumbel_sigmoid
  double temperature = 1.0;                 // gumbel_sigmoid τ (> 0)
  // Initial gate bias; NaN = the kind's default (3.0 for forget, so σ ≈ 0.95 keeps memory at the
  // start as the Forgetting Transformer does; 0 for the others).
  double init_bias = std::numeric_limits<double>::quiet_NaN();
  std::string init_weight = "normal";           // zero | normal (std 0.02)
  std::vector<std::int64_t> windows = {0, 32};  // routed: expert spans (0 = full causal)
  std::int64_t top_k = 1;                       // routed: experts per token

  bool applies_to(std::int64_t layer) const;  // false for kind none
  double resolved_init_bias() const;
};

struct ModelConfig {
  std::int64_t vocab_size = 0;  // taken from the data when 0
  std::int64_t block_size = 128;
  std::int64_t n_layer = 4;
  std::int64_t n_head = 4;
  std::int64_t n_embd = 128;
  GateConfig gate;
  // Parameter and compute dtype: f32 for training, f64 so tests can gradcheck the whole model.
  // Not part of the serialised config (checkpoints always hold F32 weights, SPEC §3).
  DType dtype = DType::f32;

  std::int64_t head_dim() const { return n_embd / n_head; }
  // Throws ValueError naming the key (`model.n_head`, `model.gate.top_k`, ...) on a bad value.
  void validate() const;
};

nlohmann::json to_json(const ModelConfig& c);
// Throws ValueError naming the key for a missing/mistyped field.
ModelConfig model_config_from_json(const nlohmann::json& j);

}  // namespace gattn::models
