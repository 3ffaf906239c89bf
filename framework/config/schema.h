// The declarative schema of every config key gattn accepts: type, default, range and allowed values.
#pragma once
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace gattn::config {

enum class KeyType {
  integer,  // int64
  number,   // double (an integer literal is accepted and stored as a double)
  boolean,
  string,           // free text (null reads as "")
  choice,           // one of KeySpec::choices
  int_list,         // list of int64
  number_list,      // list of doubles
  all_or_int_list,  // the string "all" or a list of int64 (model.gate.layers)
  param_groups,     // optim.param_groups: a list of maps, checked by the config loader
  gate_list,        // model.gates: a list of maps of scalars and lists, checked by the model's config
};

struct KeySpec {
  std::string key;  // dotted path, e.g. "optim.lr"
  KeyType type = KeyType::integer;
  nlohmann::json default_value;  // already in the stored form (numbers as double for `number`)
  std::string doc;               // one line for users (configs/example_full.yaml mirrors it)
  // Bounds on a number or on every element of a list.
  std::optional<double> min;
  bool min_exclusive = false;
  std::optional<double> max;
  bool max_exclusive = false;
  std::vector<std::string> choices;   // for `choice`
  bool nullable = false;              // null is a valid value (e.g. model.gate.init_bias = kind default)
  std::optional<std::size_t> length;  // exact length of a list
};

// Every key, grouped by section in the order to_yaml() writes them.
const std::vector<KeySpec>& schema();
// The spec of a leaf key, or nullptr.
const KeySpec* find_key(const std::string& key);
// True for a dotted prefix of some key ("model", "model.gate"), which holds a map in YAML.
bool is_section(const std::string& key);
// The known key or section closest to `key` within edit distance 2, or "" when none is.
std::string closest_key(const std::string& key);
// The closest of `candidates` within edit distance 2, or "".
std::string closest_of(const std::string& key, const std::vector<std::string>& candidates);
std::size_t edit_distance(const std::string& a, const std::string& b);

// "" when `v` satisfies the bounds of `spec`, else the constraint (e.g. "must be > 0").
std::string check_bounds(const KeySpec& spec, double v);
// The constraint as words: "must be > 0", "must be in [0, 1)", "must be one of a, b".
std::string describe_bounds(const KeySpec& spec);

// The keys allowed inside one optim.param_groups entry.
const std::vector<std::string>& param_group_keys();

}  // namespace gattn::config
