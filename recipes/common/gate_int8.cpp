// The --gate-int8 option and its reports.
#include "recipes/common/gate_int8.h"

#include <cstdio>

namespace gattn::recipes {

void add_gate_int8_option(CLI::App& cmd, bool& flag) {
  cmd.add_flag("--gate-int8", flag,
               "round every gate's weight matrices to int8 with one scale per output channel before running "
               "(docs/gates.md: 8-bit gates)");
}

std::optional<models::GateQuantization> apply_gate_int8(bool asked, models::GPT& model) {
  if (!asked) return std::nullopt;
  return models::quantize_gate_weights_int8(model);
}

std::string gate_int8_summary(const models::GateQuantization& q) {
  char buf[320];
  const double saved = q.bytes_f32 > 0 ? 100.0 * (1.0 - static_cast<double>(q.bytes_int8) / q.bytes_f32) : 0.0;
  const double share = q.model_bytes > 0 ? 100.0 * static_cast<double>(q.bytes_f32) / q.model_bytes : 0.0;
  std::snprintf(buf, sizeof buf,
                "gate int8: %lld weight matri%s, %lld values rounded per output channel: %lld -> %lld bytes (%.1f %% "
                "less; the gates were %.1f %% of the model's %.2f MB), max |error| %.3g",
                static_cast<long long>(q.tensors), q.tensors == 1 ? "x" : "ces", static_cast<long long>(q.values),
                static_cast<long long>(q.bytes_f32), static_cast<long long>(q.bytes_int8), saved, share,
                static_cast<double>(q.model_bytes) / 1e6, q.max_abs_error);
  return buf;
}

void add_gate_int8_fields(nlohmann::json& line, const models::GateQuantization& q) {
  line["gate_int8"] = true;
  line["gate_int8_tensors"] = q.tensors;
  line["gate_int8_values"] = q.values;
  line["gate_bytes_f32"] = q.bytes_f32;
  line["gate_bytes_int8"] = q.bytes_int8;
  line["gate_int8_max_abs_error"] = q.max_abs_error;
  line["model_bytes_f32"] = q.model_bytes;
}

}  // namespace gattn::recipes
