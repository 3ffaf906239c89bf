// One YAML node read as the stored value of a schema key (framework/config/schema.h), type- and
// range-checked where it is read so the error can point at its line or override (docs/config.md).
// The loader's own piece: Settings (framework/config/settings.h) is what applications use.
#pragma once
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>
#include <string>

#include "framework/config/schema.h"
#include "framework/optim/param_group.h"

namespace gattn::config {

// How to name a position: "file:line" inside a file, "override 'k=v'" for an override.
struct Source {
  std::string origin;         // the file name
  std::string override_text;  // non-empty for an override
  const std::string* text;    // the YAML text being read (the file, or the override's value)
  std::string at(const YAML::Node& n) const;
};

// The value as the user wrote it, for "got …" in messages.
std::string shown(const YAML::Node& n);

// The node as the stored value of `spec`, or a ConfigError naming `at` (or the line of a list
// item, through `src`) and the key.
nlohmann::json read_value(const KeySpec& spec, const YAML::Node& n, const Source& src, const std::string& at);

// A param group as read_value stored it (its fields already type-checked).
optim::ParamGroupOptions param_group_options(const nlohmann::json& group);

}  // namespace gattn::config
