// A stored config value written back as YAML text that reads back to the same value, for
// Settings::to_yaml (a run directory's config.yaml, docs/config.md).
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace gattn::config {

// Flow style: scalars, lists as [a, b], maps as {k: v} (a param group's fields in the documented
// order, other maps' in key order).
std::string format_value(const nlohmann::json& v);

}  // namespace gattn::config
