// "file:line" of a YAML node for error messages (the file name alone when the node has no mark):
// the config loader and the ablation file reader name positions the same way.
#pragma once
#include <yaml-cpp/yaml.h>

#include <string>

namespace gattn {

inline std::string yaml_position(const std::string& origin, const YAML::Node& n) {
  std::string out = origin;
  const YAML::Mark m = n.Mark();
  if (!m.is_null()) {
    out.push_back(':');
    out += std::to_string(m.line + 1);
  }
  return out;
}

}  // namespace gattn
