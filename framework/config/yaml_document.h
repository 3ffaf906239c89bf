// The one YAML document of a config or ablation file. YAML::Load silently keeps the first
// document of a file and drops the rest, so a second one (after '---') would be ignored: it is an
// error at its line instead. Syntax errors name "file:line" the same way.
#pragma once
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "framework/config/errors.h"
#include "framework/config/yaml_position.h"

namespace gattn {

inline YAML::Node load_single_document(const std::string& text, const std::string& origin) {
  std::vector<YAML::Node> documents;
  try {
    documents = YAML::LoadAll(text);
  } catch (const YAML::Exception& e) {
    std::string at = origin;
    if (!e.mark.is_null()) at += ":" + std::to_string(e.mark.line + 1);
    throw ConfigError(at + ": YAML syntax error: " + e.msg);
  }
  if (documents.size() > 1)
    throw ConfigError(yaml_position(origin, documents[1]) +
                      ": a second YAML document (after '---'); a config file holds exactly one, and the rest "
                      "would be ignored");
  return documents.empty() ? YAML::Node() : documents.front();
}

}  // namespace gattn
