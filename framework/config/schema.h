// A declarative config schema: every key an application accepts, with its type, default, range and
// allowed values. The machinery here is generic; the application writes its own table (gattn's run
// schema is recipes/common/run_schema.cpp, documented in docs/config.md).
#pragma once
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
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
  all_or_int_list,  // the string "all" or a list of int64
  param_groups,     // a list of optimizer parameter groups (framework/optim/param_group.h)
  map_list,         // a list of maps of plain values (scalars and lists) that the application's rules check
};

struct KeySpec {
  std::string key;  // dotted path, e.g. "optim.lr"
  KeyType type = KeyType::integer;
  nlohmann::json default_value;  // already in the stored form (numbers as double for `number`)
  std::string doc;               // one line for users: the annotated example's comment, the key table's text
  // Bounds on a number or on every element of a list.
  std::optional<double> min;
  bool min_exclusive = false;
  std::optional<double> max;
  bool max_exclusive = false;
  std::vector<std::string> choices;   // for `choice`
  bool nullable = false;              // null is a valid value (the application gives null a meaning)
  std::optional<std::size_t> length;  // exact length of a list
  // How messages name the items of a `map_list` or `all_or_int_list` ("gate entries", "block
  // indices"), and the form of a `map_list` item ("{kind: ..., ...}").
  std::string entries;
  std::string entry_form;
  // A value worth showing that the default is not (a list's entries): YAML lines under the key,
  // which the annotated example writes commented out below it.
  std::string example;

  // Modifiers, chained after the builder in one order: lower bound, upper bound, allow_null,
  // exact_length, with_example. A call out of that order throws std::logic_error, so every table
  // reads the same way.
  KeySpec& at_least(double v);      // >= v
  KeySpec& greater_than(double v);  // > v
  KeySpec& at_most(double v);       // <= v
  KeySpec& below(double v);         // < v
  KeySpec& allow_null();
  KeySpec& exact_length(std::size_t n);
  KeySpec& with_example(std::string yaml_lines);

 private:
  void advance(int stage);
  int stage_ = 0;  // the last modifier's place in the order
};

// Builders: the key, its default, what its type needs (choices, how messages name its entries),
// then its doc; bounds and the rest are the modifiers above.
KeySpec int_key(std::string key, std::int64_t def, std::string doc);
// A null default (std::nullopt) needs allow_null().
KeySpec num_key(std::string key, std::optional<double> def, std::string doc);
KeySpec bool_key(std::string key, bool def, std::string doc);
KeySpec choice_key(std::string key, std::string def, std::vector<std::string> choices, std::string doc);
KeySpec str_key(std::string key, std::string def, std::string doc);
KeySpec int_list_key(std::string key, std::vector<std::int64_t> def, std::string doc);
KeySpec num_list_key(std::string key, std::vector<double> def, std::string doc);
// Defaults to "all".
KeySpec all_or_int_list_key(std::string key, std::string entries, std::string doc);
// Both default to the empty list.
KeySpec param_groups_key(std::string key, std::string doc);
KeySpec map_list_key(std::string key, std::string entries, std::string entry_form, std::string doc);

// An application's keys, grouped by section in the order Settings::to_yaml writes them. Schemas are
// long-lived (a function-local static): Settings keep a pointer to theirs.
class Schema {
 public:
  // Throws std::invalid_argument for a key given twice or a key that is also a section.
  explicit Schema(std::vector<KeySpec> keys);

  const std::vector<KeySpec>& keys() const { return keys_; }
  // The spec of a leaf key, or nullptr.
  const KeySpec* find(const std::string& key) const;
  // True for a dotted prefix of some key ("model", "model.gate"), which holds a map in YAML.
  bool is_section(const std::string& key) const;
  // The known key or section closest to `key` within edit distance 2, or "" when none is.
  std::string closest_key(const std::string& key) const;

 private:
  std::vector<KeySpec> keys_;
  std::unordered_map<std::string, std::size_t> index_;  // key → position in keys_ (find runs per key read)
  std::unordered_set<std::string> sections_;
  std::vector<std::string> names_;  // keys and sections, in the order closest_key tries them
};

// The closest of `candidates` within edit distance 2, or "" (the first of equally close ones).
std::string closest_of(const std::string& key, const std::vector<std::string>& candidates);
std::size_t edit_distance(const std::string& a, const std::string& b);

// "" when `v` satisfies the bounds of `spec`, else the constraint (e.g. "must be > 0").
std::string check_bounds(const KeySpec& spec, double v);
// The constraint as words: "must be > 0", "must be in [0, 1)", "must be one of a, b".
std::string describe_bounds(const KeySpec& spec);

// The keys allowed inside one param_groups entry, in the order to_yaml writes them.
const std::vector<std::string>& param_group_keys();

}  // namespace gattn::config
