// One entry of `optim.param_groups`: the parameters its globs match train with their own rate,
// decay or freeze. The config loader reads these and AdamW uses them (one struct for both).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gattn::optim {

// Unset optionals fall back to the top-level optim.* values.
struct ParamGroupOptions {
  std::string name;
  std::vector<std::string> match;  // globs over dotted parameter names (glob.h); `*` matches dots too
  std::optional<double> lr;        // absolute rate: replaces the schedule entirely
  std::optional<double> lr_scale;  // multiplies the scheduled rate (never together with lr)
  std::optional<double> weight_decay;
  // Steps 0 … freeze_steps−1 leave this group's parameters, moments and step counts untouched.
  std::int64_t freeze_steps = 0;

  bool operator==(const ParamGroupOptions&) const = default;
};

}  // namespace gattn::optim
