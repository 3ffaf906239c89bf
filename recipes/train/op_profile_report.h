// The op profile of a training run (`gattn train --profile-ops`) as a table and as JSON.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "core/autograd/op_profile.h"

namespace gattn::recipes {

using OpProfile = std::map<std::string, autograd::profile::OpTimes>;

// A markdown table, most expensive first: per op, forward and backward milliseconds per step and
// calls per step, each op's share of the profiled time, and the total per step.
std::string op_profile_table(const OpProfile& profile, std::int64_t steps);

// {"steps": N, "step_ms": total, "ops": [{"op", "forward_ms", "backward_ms", "forward_calls",
// "backward_calls"}, …]} with times per step, most expensive first.
nlohmann::json op_profile_json(const OpProfile& profile, std::int64_t steps);

}  // namespace gattn::recipes
