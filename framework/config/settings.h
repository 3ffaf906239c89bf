// Settings resolved from a YAML file, dotted overrides and a schema's defaults, validated up front
// with errors that name the file line (or the override) and the key (docs/config.md). Generic: the
// keys come from a Schema and the application's whole-config rules from a Rules (gattn's run config
// is recipes/common/run_config.h).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "framework/config/errors.h"
#include "framework/config/schema.h"
#include "framework/optim/param_group.h"

namespace gattn::config {

class Settings;

// Two forms of one setting that replace each other: the keys of a section (a shorthand, e.g.
// model.gate.*) and a list key (e.g. model.gates). A file that sets both (a section key away from
// its default and a non-empty list) is an error; an override of one form puts the other form back
// to its defaults, so a command line can switch forms over a file.
struct ExclusiveForms {
  std::string section;   // the shorthand's keys are section + "."
  std::string list_key;  // a map_list or list key
  // Ends the error "<section> and <list_key> are both given (<list_key> at <where>): <hint>".
  std::string hint;
};

// What an application adds to the per-key checks of its schema.
struct Rules {
  std::vector<ExclusiveForms> exclusive_forms;
  // Cross-key checks on the resolved settings. A ValueError it throws becomes a ConfigError at the
  // first key its message names that the file or an override set (the file when none is); a
  // ConfigError passes through unchanged. Empty: no checks.
  std::function<void(const Settings&)> validate;
};

class Settings {
 public:
  // Reads `yaml_path`, applies `overrides` ("key.path=value", value parsed as YAML), fills the
  // defaults of `schema` and validates. Throws ConfigError naming the file:line or the override and
  // the key. `schema` must outlive the Settings (the result keeps a pointer to it).
  static Settings load(const Schema& schema, const Rules& rules, const std::string& yaml_path,
                       const std::vector<std::string>& overrides = {});
  // The same from text; `origin_name` stands for the file name in messages.
  static Settings from_string(const Schema& schema, const Rules& rules, const std::string& yaml_text,
                              const std::vector<std::string>& overrides = {},
                              const std::string& origin_name = "<string>");
  // Defaults only (what an empty file gives), validated by the rules too.
  static Settings defaults(const Schema& schema, const Rules& rules);

  // Typed getters; a key that is not in the schema, or of another type, throws ConfigError (a
  // programming error, reported rather than crashing).
  std::int64_t get_int(const std::string& key) const;
  double get_double(const std::string& key) const;  // also reads integer keys
  bool get_bool(const std::string& key) const;
  std::string get_string(const std::string& key) const;  // strings and choices ("all" of an all_or_int_list)
  std::vector<std::int64_t> get_int_list(const std::string& key) const;
  std::vector<double> get_double_list(const std::string& key) const;
  std::vector<optim::ParamGroupOptions> get_param_groups(const std::string& key) const;
  // False for a nullable key left null and for a key not in the schema; true for every other key.
  bool has(const std::string& key) const;
  // The stored value of a key (numbers of `number` keys are doubles).
  const nlohmann::json& value(const std::string& key) const;

  // Where a key's value came from: "file.yaml:12", "override 'optim.lr=1e-3'" or, for a default,
  // the origin. Later layers (e.g. a param-group glob that matches nothing) use it to point at the line.
  std::string where(const std::string& key) const;
  // True when the file or an override set `key` (to any value, its default too).
  bool set_by_user(const std::string& key) const { return where_.count(key) > 0; }
  const std::string& origin() const { return origin_; }
  const Schema& schema() const { return *schema_; }

  // Every key in schema order, nested by section; loading to_yaml() gives equal Settings.
  std::string to_yaml() const;
  // Nested object of every key (null for an unset nullable key).
  nlohmann::json to_json() const;

  // Equal resolved values (where the values came from is ignored).
  bool operator==(const Settings& other) const { return values_ == other.values_; }

 private:
  Settings(const Schema& schema, std::string origin);
  static Settings build(const Schema& schema, const Rules& rules, const std::string& yaml_text,
                        const std::vector<std::string>& overrides, const std::string& origin_name);
  void validate_whole(const Rules& rules) const;
  // Puts `key`, or every key starting with `prefix`, back to its default, as if never set.
  void reset_key(const KeySpec& spec);
  void reset_keys_with_prefix(const std::string& prefix);

  const Schema* schema_;
  std::string origin_;
  std::map<std::string, nlohmann::json> values_;  // every schema key
  std::map<std::string, std::string> where_;      // keys set by the file or an override
};

}  // namespace gattn::config
