// `--gate-int8` of `gattn eval`, `gattn sample` and `gattn bench generate`: the checkpoint's gate
// weights rounded to int8 per output channel before the command runs (models/gating/gate_quantize.h),
// and what that changed, for the terminal and for JSON lines.
#pragma once
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "models/gating/gate_quantize.h"

namespace gattn::recipes {

// Adds the --gate-int8 flag to `cmd`.
void add_gate_int8_option(CLI::App& cmd, bool& flag);

// Rounds `model`'s gate weights when `asked`; nullopt when not. A model without gate weights throws
// ValueError naming --gate-int8 (exit 2).
std::optional<models::GateQuantization> apply_gate_int8(bool asked, models::GPT& model);

// "gate int8: 8 weight matrices, 131072 values rounded per output channel: 524288 → 132096 bytes
// (74.8 % less; the gates were 16.1 % of the model's 3.26 MB), max |error| 1.2e-4".
std::string gate_int8_summary(const models::GateQuantization& q);

// {"gate_int8": true, "gate_int8_tensors", "gate_int8_values", "gate_bytes_f32", "gate_bytes_int8",
// "gate_int8_max_abs_error", "model_bytes_f32"} added to `line`.
void add_gate_int8_fields(nlohmann::json& line, const models::GateQuantization& q);

}  // namespace gattn::recipes
