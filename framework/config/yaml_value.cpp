// Reading a YAML node as a key's stored value: the scalar parsers (plain finite decimals, YAML's
// booleans, quoted scalars as strings) and the shapes of lists, param groups and map lists.
#include "framework/config/yaml_value.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

#include "framework/config/errors.h"
#include "framework/config/yaml_position.h"
#include "framework/optim/param_group_rules.h"

namespace gattn::config {

using nlohmann::json;

namespace {

[[noreturn]] void fail(const std::string& where, const std::string& msg) { throw ConfigError(where + ": " + msg); }

// A quoted scalar ('5' or "5") is a string even when it looks like a number.
bool is_quoted(const YAML::Node& n) { return n.IsScalar() && n.Tag() == "!"; }

std::optional<std::int64_t> parse_int(const YAML::Node& n) {
  if (!n.IsScalar() || is_quoted(n)) return std::nullopt;
  std::string s = n.Scalar();
  if (!s.empty() && s[0] == '+') s.erase(0, 1);
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::optional<double> parse_double(const YAML::Node& n) {
  if (!n.IsScalar() || is_quoted(n)) return std::nullopt;
  const std::string& s = n.Scalar();
  if (s.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  // strtod also reads "inf", "nan" and hex floats: only plain finite decimals are config values.
  if (end != s.c_str() + s.size() || errno == ERANGE || !std::isfinite(v)) return std::nullopt;
  if (s.find_first_of("xXnNiI") != std::string::npos) return std::nullopt;
  return v;
}

std::optional<bool> parse_bool(const YAML::Node& n) {
  if (!n.IsScalar() || is_quoted(n)) return std::nullopt;
  static const std::set<std::string> yes = {"true", "True", "TRUE", "yes", "Yes", "on", "On"};
  static const std::set<std::string> no = {"false", "False", "FALSE", "no", "No", "off", "Off"};
  if (yes.count(n.Scalar())) return true;
  if (no.count(n.Scalar())) return false;
  return std::nullopt;
}

std::string suggestion(const std::string& name, const std::vector<std::string>& candidates) {
  std::string best = closest_of(name, candidates);
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

json coerce_int(const KeySpec& s, const std::string& key, const YAML::Node& n, const std::string& at) {
  auto v = parse_int(n);
  if (!v) fail(at, key + " must be an integer, got " + shown(n));
  std::string bound = check_bounds(s, static_cast<double>(*v));
  if (!bound.empty()) fail(at, key + " " + bound + ", got " + shown(n));
  return *v;
}

json coerce_double(const KeySpec& s, const std::string& key, const YAML::Node& n, const std::string& at) {
  auto v = parse_double(n);
  if (!v) fail(at, key + " must be a finite number, got " + shown(n));
  std::string bound = check_bounds(s, *v);
  if (!bound.empty()) fail(at, key + " " + bound + ", got " + shown(n));
  return *v;
}

json coerce_list(const KeySpec& s, const std::string& key, const YAML::Node& n, const std::string& at, bool ints) {
  const char* what = ints ? "a list of integers" : "a list of numbers";
  if (!n.IsSequence()) fail(at, key + " must be " + std::string(what) + ", got " + shown(n));
  if (s.length && n.size() != *s.length)
    fail(at, key + " must have " + std::to_string(*s.length) + " elements, got " + std::to_string(n.size()));
  json out = json::array();
  for (std::size_t i = 0; i < n.size(); ++i) {
    std::string elem = key;
    elem.push_back('[');
    elem += std::to_string(i);
    elem.push_back(']');
    out.push_back(ints ? coerce_int(s, elem, n[i], at) : coerce_double(s, elem, n[i], at));
  }
  return out;
}

json coerce_param_groups(const std::string& key, const YAML::Node& n, const Source& src) {
  if (!n.IsDefined() || n.IsNull()) return json::array();
  if (!n.IsSequence()) fail(src.at(n), key + " must be a list of groups, got " + shown(n));
  json out = json::array();
  std::set<std::string> names;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const YAML::Node g = n[i];
    std::string gkey = key;
    gkey.push_back('[');
    gkey += std::to_string(i);
    gkey.push_back(']');
    if (!g.IsMap()) fail(src.at(g), gkey + " must be a map {name, match, ...}, got " + shown(g));
    json group = json::object();
    std::map<std::string, std::string> field_at;  // where each field was written
    for (auto it = g.begin(); it != g.end(); ++it) {
      const std::string field = it->first.Scalar();
      const YAML::Node v = it->second;
      const std::string at = src.at(it->first);
      const std::string fkey = gkey + "." + field;
      if (group.contains(field)) fail(at, "duplicate key '" + field + "' in " + gkey);
      field_at[field] = at;
      const KeySpec any;  // types only: the bounds are optim::param_group_problem's
      if (field == "name") {
        if (!v.IsScalar() || v.Scalar().empty()) fail(at, fkey + " must be a non-empty string, got " + shown(v));
        group[field] = v.Scalar();
      } else if (field == "match") {
        if (!v.IsSequence() || v.size() == 0)
          fail(at, fkey + " must be a non-empty list of parameter-name globs, got " + shown(v));
        json globs = json::array();
        for (std::size_t j = 0; j < v.size(); ++j) {
          if (!v[j].IsScalar() || v[j].Scalar().empty())
            fail(at, fkey + " must be a list of non-empty strings, got " + shown(v[j]));
          globs.push_back(v[j].Scalar());
        }
        group[field] = globs;
      } else if (field == "lr" || field == "lr_scale" || field == "weight_decay") {
        group[field] = coerce_double(any, fkey, v, at);
      } else if (field == "freeze_steps") {
        group[field] = coerce_int(any, fkey, v, at);
      } else {
        fail(at, "unknown key '" + field + "' in " + gkey + suggestion(field, param_group_keys()));
      }
    }
    const std::string at = src.at(g);
    if (!group.contains("name")) fail(at, gkey + " needs a 'name'");
    const std::string label = gkey + " ('" + group["name"].get<std::string>() + "')";
    if (!group.contains("match")) fail(at, label + " needs 'match', a non-empty list of parameter-name globs");
    // The bounds every group obeys, shared with AdamW.
    if (auto problem = optim::param_group_problem(param_group_options(group)))
      fail(field_at.count(problem->field) ? field_at[problem->field] : at,
           gkey + "." + problem->field + " " + problem->message);
    if (!names.insert(group["name"].get<std::string>()).second) fail(at, label + ": the group name is used twice");
    out.push_back(group);
  }
  return out;
}

// A YAML scalar or list as JSON, typed as the text reads: integer, number, boolean, null, else string.
json plain_value(const YAML::Node& n, const std::string& key, const Source& src) {
  if (!n.IsDefined() || n.IsNull()) return nullptr;
  if (n.IsSequence()) {
    json out = json::array();
    for (std::size_t i = 0; i < n.size(); ++i) {
      if (!n[i].IsScalar()) fail(src.at(n[i]), key + " must be a list of plain values, got " + shown(n[i]));
      out.push_back(plain_value(n[i], key, src));
    }
    return out;
  }
  if (!n.IsScalar()) fail(src.at(n), key + " must be a value or a list, got " + shown(n));
  if (auto i = parse_int(n)) return *i;
  if (auto d = parse_double(n)) return *d;
  if (auto b = parse_bool(n)) return *b;
  return n.Scalar();
}

// A list of maps whose keys and values the application's rules check (gattn's model.gates: against
// the gate kinds, which the config machinery does not know); here only the shape is checked.
json coerce_map_list(const KeySpec& s, const YAML::Node& n, const Source& src) {
  const std::string& key = s.key;
  if (!n.IsDefined() || n.IsNull()) return json::array();
  if (!n.IsSequence())
    fail(src.at(n), key + " must be a list of " + s.entries + " (" + s.entry_form + "), got " + shown(n));
  json out = json::array();
  for (std::size_t i = 0; i < n.size(); ++i) {
    const YAML::Node g = n[i];
    const std::string gkey = key + "[" + std::to_string(i) + "]";
    if (!g.IsMap()) fail(src.at(g), gkey + " must be a map " + s.entry_form + ", got " + shown(g));
    json entry = json::object();
    for (auto it = g.begin(); it != g.end(); ++it) {
      if (!it->first.IsScalar()) fail(src.at(it->first), "keys must be plain names, got " + shown(it->first));
      const std::string field = it->first.Scalar();
      if (entry.contains(field)) fail(src.at(it->first), "duplicate key '" + field + "' in " + gkey);
      entry[field] = plain_value(it->second, gkey + "." + field, src);
    }
    out.push_back(entry);
  }
  return out;
}

}  // namespace

std::string Source::at(const YAML::Node& n) const {
  if (!override_text.empty()) return "override '" + override_text + "'";
  return yaml_position(origin, n);
}

std::string shown(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "null";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a map";
  return is_quoted(n) ? "'" + n.Scalar() + "'" : n.Scalar();
}

optim::ParamGroupOptions param_group_options(const json& g) {
  optim::ParamGroupOptions p;
  p.name = g.at("name").get<std::string>();
  p.match = g.at("match").get<std::vector<std::string>>();
  if (g.contains("lr")) p.lr = g["lr"].get<double>();
  if (g.contains("lr_scale")) p.lr_scale = g["lr_scale"].get<double>();
  if (g.contains("weight_decay")) p.weight_decay = g["weight_decay"].get<double>();
  if (g.contains("freeze_steps")) p.freeze_steps = g["freeze_steps"].get<std::int64_t>();
  return p;
}

json read_value(const KeySpec& s, const YAML::Node& n, const Source& src, const std::string& at) {
  const std::string& key = s.key;
  const bool null = !n.IsDefined() || n.IsNull();
  if (null && s.nullable) return nullptr;
  switch (s.type) {
    case KeyType::integer:
      return coerce_int(s, key, n, at);
    case KeyType::number:
      return coerce_double(s, key, n, at);
    case KeyType::boolean: {
      auto v = parse_bool(n);
      if (!v) fail(at, key + " must be true or false, got " + shown(n));
      return *v;
    }
    case KeyType::string:
      if (null) return "";
      if (!n.IsScalar()) fail(at, key + " must be a string, got " + shown(n));
      return n.Scalar();
    case KeyType::choice: {
      if (n.IsScalar())
        for (const std::string& c : s.choices)
          if (n.Scalar() == c) return c;
      fail(at, key + " " + describe_bounds(s) + ", got " + shown(n) +
                   (n.IsScalar() ? suggestion(n.Scalar(), s.choices) : ""));
    }
    case KeyType::int_list:
      return coerce_list(s, key, n, at, true);
    case KeyType::number_list:
      return coerce_list(s, key, n, at, false);
    case KeyType::all_or_int_list:
      if (n.IsScalar() && n.Scalar() == "all") return "all";
      if (!n.IsSequence()) fail(at, key + " must be 'all' or a list of " + s.entries + ", got " + shown(n));
      return coerce_list(s, key, n, at, true);
    case KeyType::param_groups:
      return coerce_param_groups(key, n, src);
    case KeyType::map_list:
      // `model.gates: null` is no list: refused like a null section (`model.gate: null`).
      if (null && n.IsDefined()) fail(at, key + " is null: give a list of entries ([] for none), or leave it out");
      return coerce_map_list(s, n, src);
  }
  fail(at, key + ": unhandled key type");
}

}  // namespace gattn::config
