// The key builders, the Schema's lookups, and the helpers that check values against a key and
// suggest the nearest key for a typo.
#include "framework/config/schema.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace gattn::config {

using nlohmann::json;

namespace {

KeySpec base_key(std::string key, KeyType type, json def, std::string doc) {
  KeySpec s;
  s.key = std::move(key);
  s.type = type;
  s.default_value = std::move(def);
  s.doc = std::move(doc);
  return s;
}

std::string num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

KeySpec int_key(std::string key, std::int64_t def, std::string doc) {
  return base_key(std::move(key), KeyType::integer, def, std::move(doc));
}

KeySpec num_key(std::string key, std::optional<double> def, std::string doc) {
  return base_key(std::move(key), KeyType::number, def ? json(*def) : json(nullptr), std::move(doc));
}

KeySpec bool_key(std::string key, bool def, std::string doc) {
  return base_key(std::move(key), KeyType::boolean, def, std::move(doc));
}

KeySpec choice_key(std::string key, std::string def, std::vector<std::string> choices, std::string doc) {
  KeySpec s = base_key(std::move(key), KeyType::choice, std::move(def), std::move(doc));
  s.choices = std::move(choices);
  return s;
}

KeySpec str_key(std::string key, std::string def, std::string doc) {
  return base_key(std::move(key), KeyType::string, std::move(def), std::move(doc));
}

KeySpec int_list_key(std::string key, std::vector<std::int64_t> def, std::string doc) {
  return base_key(std::move(key), KeyType::int_list, def, std::move(doc));
}

KeySpec num_list_key(std::string key, std::vector<double> def, std::string doc) {
  return base_key(std::move(key), KeyType::number_list, def, std::move(doc));
}

KeySpec all_or_int_list_key(std::string key, std::string entries, std::string doc) {
  KeySpec s = base_key(std::move(key), KeyType::all_or_int_list, "all", std::move(doc));
  s.entries = std::move(entries);
  return s;
}

KeySpec param_groups_key(std::string key, std::string doc) {
  return base_key(std::move(key), KeyType::param_groups, json::array(), std::move(doc));
}

KeySpec map_list_key(std::string key, std::string entries, std::string entry_form, std::string doc) {
  KeySpec s = base_key(std::move(key), KeyType::map_list, json::array(), std::move(doc));
  s.entries = std::move(entries);
  s.entry_form = std::move(entry_form);
  return s;
}

namespace {

// The modifiers' places in their one order.
enum Stage { kLower = 1, kUpper, kNull, kLength, kExample };

}  // namespace

void KeySpec::advance(int stage) {
  if (stage <= stage_)
    throw std::logic_error("config schema: key '" + key +
                           "': modifiers go in the order lower bound, upper bound, allow_null, exact_length, "
                           "with_example, each once");
  stage_ = stage;
}

KeySpec& KeySpec::at_least(double v) {
  advance(kLower);
  min = v;
  min_exclusive = false;
  return *this;
}

KeySpec& KeySpec::greater_than(double v) {
  advance(kLower);
  min = v;
  min_exclusive = true;
  return *this;
}

KeySpec& KeySpec::at_most(double v) {
  advance(kUpper);
  max = v;
  max_exclusive = false;
  return *this;
}

KeySpec& KeySpec::below(double v) {
  advance(kUpper);
  max = v;
  max_exclusive = true;
  return *this;
}

KeySpec& KeySpec::allow_null() {
  advance(kNull);
  nullable = true;
  return *this;
}

KeySpec& KeySpec::exact_length(std::size_t n) {
  advance(kLength);
  length = n;
  return *this;
}

KeySpec& KeySpec::with_example(std::string yaml_lines) {
  advance(kExample);
  example = std::move(yaml_lines);
  return *this;
}

Schema::Schema(std::vector<KeySpec> keys) : keys_(std::move(keys)) {
  for (std::size_t i = 0; i < keys_.size(); ++i) {
    const std::string& key = keys_[i].key;
    if (!index_.emplace(key, i).second) throw std::invalid_argument("config schema: key '" + key + "' given twice");
    names_.push_back(key);
    // Sections too, so a misspelt section ("optm") is matched against "optim".
    for (std::size_t p = key.find('.'); p != std::string::npos; p = key.find('.', p + 1)) {
      std::string section = key.substr(0, p);
      if (sections_.insert(section).second) names_.push_back(std::move(section));
    }
  }
  for (const std::string& section : sections_)
    if (index_.count(section))
      throw std::invalid_argument("config schema: '" + section + "' is both a key and a section");
}

const KeySpec* Schema::find(const std::string& key) const {
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : &keys_[it->second];
}

bool Schema::is_section(const std::string& key) const { return sections_.count(key) > 0; }

std::string Schema::closest_key(const std::string& key) const { return closest_of(key, names_); }

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest_of(const std::string& key, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = 3;  // suggest only within distance 2: farther guesses mislead more than help
  for (const std::string& c : candidates) {
    std::size_t d = edit_distance(key, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

std::string describe_bounds(const KeySpec& spec) {
  if (spec.type == KeyType::choice) {
    std::string out = "must be one of ";
    for (std::size_t i = 0; i < spec.choices.size(); ++i) {
      if (i) out += ", ";
      out += spec.choices[i];
    }
    return out;
  }
  if (spec.min && spec.max)
    return "must be in " + std::string(spec.min_exclusive ? "(" : "[") + num(*spec.min) + ", " + num(*spec.max) +
           (spec.max_exclusive ? ")" : "]");
  if (spec.min) return std::string("must be ") + (spec.min_exclusive ? "> " : ">= ") + num(*spec.min);
  if (spec.max) return std::string("must be ") + (spec.max_exclusive ? "< " : "<= ") + num(*spec.max);
  return "";
}

std::string check_bounds(const KeySpec& spec, double v) {
  bool ok = true;
  if (spec.min) ok = ok && (spec.min_exclusive ? v > *spec.min : v >= *spec.min);
  if (spec.max) ok = ok && (spec.max_exclusive ? v < *spec.max : v <= *spec.max);
  return ok ? "" : describe_bounds(spec);
}

const std::vector<std::string>& param_group_keys() {
  static const std::vector<std::string> keys = {"name", "match", "lr", "lr_scale", "weight_decay", "freeze_steps"};
  return keys;
}

}  // namespace gattn::config
