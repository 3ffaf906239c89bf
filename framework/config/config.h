// The resolved run config: YAML file + dotted overrides + schema defaults, validated up front with
// errors that name the file line (or the override) and the key.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "framework/config/errors.h"
#include "framework/optim/param_group.h"
#include "models/config.h"

namespace gattn {

// One entry of optim.param_groups (docs/config.md): the optimizer's own struct, so the config hands
// AdamW what it read without a copy field by field.
using ParamGroupSpec = optim::ParamGroupOptions;

class Config {
 public:
  // Reads `yaml_path`, applies `overrides` ("key.path=value", value parsed as YAML), fills the
  // defaults and validates. Throws ConfigError naming the file:line or the override and the key.
  static Config load(const std::string& yaml_path, const std::vector<std::string>& overrides = {});
  // The same from text; `origin_name` stands for the file name in messages.
  static Config from_string(const std::string& yaml_text, const std::vector<std::string>& overrides = {},
                            const std::string& origin_name = "<string>");
  // Defaults only (what an empty file gives).
  static Config defaults();

  // Typed getters; a key that is not in the schema, or of another type, throws ConfigError (a
  // programming error, reported rather than crashing).
  std::int64_t get_int(const std::string& key) const;
  double get_double(const std::string& key) const;  // also reads integer keys
  bool get_bool(const std::string& key) const;
  std::string get_string(const std::string& key) const;  // strings and choices ("all" for gate.layers)
  std::vector<std::int64_t> get_int_list(const std::string& key) const;
  std::vector<double> get_double_list(const std::string& key) const;
  // False for a nullable key left null (model.gate.init_bias); true for every other known key.
  bool has(const std::string& key) const;
  // The stored value of a key (numbers of `number` keys are doubles).
  const nlohmann::json& value(const std::string& key) const;

  // Where a key's value came from: "file.yaml:12", "override 'optim.lr=1e-3'" or "default". Later
  // layers (e.g. a param-group glob that matches nothing) use it to point at the line.
  std::string where(const std::string& key) const;
  const std::string& origin() const { return origin_; }

  models::ModelConfig model_config() const;
  std::vector<ParamGroupSpec> param_groups() const;
  // run.dir, or runs/<run.name> when it is empty.
  std::string run_dir() const;

  // Every key in schema order, nested by section; load(to_yaml()) gives an equal Config.
  std::string to_yaml() const;
  // Nested object of every key (null for an unset nullable key).
  nlohmann::json to_json() const;

  // Equal resolved values (where the values came from is ignored).
  bool operator==(const Config& other) const { return values_ == other.values_; }

 private:
  Config() = default;
  static Config build(const std::string& yaml_text, const std::vector<std::string>& overrides,
                      const std::string& origin_name);
  void validate_whole() const;
  // Puts every key starting with `prefix` back to its default, as if never set.
  void reset_keys_with_prefix(const std::string& prefix);
  void check_run_name() const;  // run.name must be one folder name under runs/

  std::string origin_;
  std::map<std::string, nlohmann::json> values_;  // every schema key
  std::map<std::string, std::string> where_;      // keys set by the file or an override
};

}  // namespace gattn
