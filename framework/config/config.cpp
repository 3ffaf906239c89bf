// Config loading: YAML file, then dotted overrides, over the schema defaults; every value is
// type- and range-checked where it is read so the error can point at its line or override.
#include "framework/config/config.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <set>

#include "framework/config/schema.h"
#include "framework/config/yaml_document.h"
#include "framework/config/yaml_position.h"
#include "framework/io/input_file.h"
#include "framework/optim/param_group_rules.h"

namespace gattn {

namespace {

constexpr const char* kGates = "model.gates";
constexpr const char* kGatePrefix = "model.gate.";

using config::KeySpec;
using config::KeyType;
using nlohmann::json;

[[noreturn]] void fail(const std::string& where, const std::string& msg) { throw ConfigError(where + ": " + msg); }

// One layer of values (the file or one override) and where each came from.
struct Layer {
  std::map<std::string, json> values;
  std::map<std::string, std::string> where;
};

// How to name a position: "file:line" inside a file, "override 'k=v'" for an override.
struct Source {
  std::string origin;         // the file name
  std::string override_text;  // non-empty for an override
  const std::string* text;    // the YAML text being read (the file, or the override's value)
  std::string at(const YAML::Node& n) const {
    if (!override_text.empty()) return "override '" + override_text + "'";
    return yaml_position(origin, n);
  }
};

// A quoted scalar ('5' or "5") is a string even when it looks like a number.
bool is_quoted(const YAML::Node& n) { return n.IsScalar() && n.Tag() == "!"; }

// The value as the user wrote it, for "got …" in messages.
std::string shown(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "null";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a map";
  return is_quoted(n) ? "'" + n.Scalar() + "'" : n.Scalar();
}

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
  std::string best = config::closest_of(name, candidates);
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

json coerce_int(const KeySpec& s, const std::string& key, const YAML::Node& n, const std::string& at) {
  auto v = parse_int(n);
  if (!v) fail(at, key + " must be an integer, got " + shown(n));
  std::string bound = config::check_bounds(s, static_cast<double>(*v));
  if (!bound.empty()) fail(at, key + " " + bound + ", got " + shown(n));
  return *v;
}

json coerce_double(const KeySpec& s, const std::string& key, const YAML::Node& n, const std::string& at) {
  auto v = parse_double(n);
  if (!v) fail(at, key + " must be a finite number, got " + shown(n));
  std::string bound = config::check_bounds(s, *v);
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

// A param group as the loader stored it (its fields already type-checked).
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
        fail(at, "unknown key '" + field + "' in " + gkey + suggestion(field, config::param_group_keys()));
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

// model.gates: a list of maps whose keys and values the model's config checks against the gate
// kinds (the config machinery does not know them); here only the shape is checked.
json coerce_gate_list(const std::string& key, const YAML::Node& n, const Source& src) {
  if (!n.IsDefined() || n.IsNull()) return json::array();
  if (!n.IsSequence()) fail(src.at(n), key + " must be a list of gate entries ({kind: ..., ...}), got " + shown(n));
  json out = json::array();
  for (std::size_t i = 0; i < n.size(); ++i) {
    const YAML::Node g = n[i];
    const std::string gkey = key + "[" + std::to_string(i) + "]";
    if (!g.IsMap()) fail(src.at(g), gkey + " must be a map {kind: ..., ...}, got " + shown(g));
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

// The node as the stored value of `s`, or a ConfigError naming `at` and the key.
json coerce(const KeySpec& s, const YAML::Node& n, const Source& src, const std::string& at) {
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
      fail(at, key + " " + config::describe_bounds(s) + ", got " + shown(n) +
                   (n.IsScalar() ? suggestion(n.Scalar(), s.choices) : ""));
    }
    case KeyType::int_list:
      return coerce_list(s, key, n, at, true);
    case KeyType::number_list:
      return coerce_list(s, key, n, at, false);
    case KeyType::all_or_int_list:
      if (n.IsScalar() && n.Scalar() == "all") return "all";
      if (!n.IsSequence()) fail(at, key + " must be 'all' or a list of block indices, got " + shown(n));
      return coerce_list(s, key, n, at, true);
    case KeyType::param_groups:
      return coerce_param_groups(key, n, src);
    case KeyType::gate_list:
      return coerce_gate_list(key, n, src);
  }
  fail(at, key + ": unhandled key type");
}

std::string join_key(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

std::string unknown_key(const std::string& key) {
  std::string best = config::closest_key(key);
  return "unknown key '" + key + "'" + (best.empty() ? "" : " (did you mean '" + best + "'?)");
}

// The first schema key inside a section, for the example in a message ("model.vocab_size").
std::string first_key_of(const std::string& section) {
  for (const KeySpec& s : config::schema())
    if (s.key.rfind(section + ".", 0) == 0) return s.key.substr(section.size() + 1);
  return "key";
}

// Whether a null node was written as a null literal (`model: null`, `model: ~`) rather than left
// empty (`model:` with its keys commented out). yaml-cpp reads both as Null; only the literal's
// mark points at the literal itself.
bool written_as_null(const YAML::Node& n, const std::string& text) {
  const YAML::Mark m = n.Mark();
  if (m.is_null() || m.pos < 0) return false;
  const auto pos = static_cast<std::size_t>(m.pos);
  for (const std::string literal : {"null", "Null", "NULL", "~"}) {
    if (text.compare(pos, literal.size(), literal) != 0) continue;
    const std::size_t after = pos + literal.size();
    if (after >= text.size() || std::string(" \t\r\n#,]}").find(text[after]) != std::string::npos) return true;
  }
  return false;
}

// Sets `key` from `n` into `layer`, descending into sections.
void apply(Layer& layer, const std::string& key, const YAML::Node& n, const Source& src, const YAML::Node& key_node) {
  const std::string at = src.at(key_node);
  if (const KeySpec* s = config::find_key(key)) {
    if (src.override_text.empty() && layer.values.count(key)) fail(at, "duplicate key '" + key + "'");
    layer.values[key] = coerce(*s, n, src, at);
    layer.where[key] = at;
    return;
  }
  if (!key.empty() && !config::is_section(key)) fail(at, unknown_key(key));
  if (!n.IsDefined() || n.IsNull()) {
    // An empty file or section (`optim:` with its keys commented out) keeps the defaults, but
    // `model: null` reads as "no model" and used to train the default one silently: an error.
    if (key.empty() || !written_as_null(n, *src.text)) return;
    fail(at, "'" + key + "' is null: give its keys under it (e.g. " + first_key_of(key) + ": ...), or leave it out");
  }
  if (!n.IsMap())
    fail(at, (key.empty() ? std::string("the config") : "'" + key + "'") + " must be a map of keys, got " + shown(n));
  for (auto it = n.begin(); it != n.end(); ++it) {
    if (!it->first.IsScalar()) fail(src.at(it->first), "keys must be plain names, got " + shown(it->first));
    apply(layer, join_key(key, it->first.Scalar()), it->second, src, it->first);
  }
}

// The shortest text that reads back as the same double, always with a '.' so YAML readers (PyYAML
// too) see a float.
std::string format_double(double v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, res.ptr);
  if (s.find('.') == std::string::npos) {
    std::size_t e = s.find('e');
    s.insert(e == std::string::npos ? s.size() : e, ".0");
  }
  return s;
}

// A string as YAML: plain when it cannot be misread, else double-quoted (JSON escapes are valid YAML).
std::string format_string(const std::string& s) {
  static const std::set<std::string> special = {"true", "false", "yes", "no", "on", "off", "null", "~",
                                                "True", "False", "Yes", "No", "On", "Off", "Null", "NULL",
                                                "TRUE", "FALSE", "YES", "NO", "ON", "OFF"};
  bool plain = !s.empty() && !special.count(s) && (std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_');
  for (char c : s)
    plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '/' || c == '-');
  return plain ? s : json(s).dump();
}

std::string format_value(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer()) return std::to_string(v.get<std::int64_t>());
  if (v.is_number_float()) return format_double(v.get<double>());
  if (v.is_string()) return format_string(v.get<std::string>());
  if (v.is_array()) {
    std::string out = "[";
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (i) out += ", ";
      out += format_value(v[i]);
    }
    return out + "]";
  }
  // A map (a param group, a gate entry) as one flow map: a param group's fields in the documented
  // order, other maps' in key order.
  std::vector<std::string> fields;
  if (v.contains("match")) {
    for (const std::string& f : config::param_group_keys())
      if (v.contains(f)) fields.push_back(f);
  } else {
    for (auto it = v.begin(); it != v.end(); ++it) fields.push_back(it.key());
  }
  std::string out = "{";
  for (std::size_t i = 0; i < fields.size(); ++i)
    out += (i ? ", " : "") + fields[i] + ": " + format_value(v[fields[i]]);
  return out + "}";
}

std::vector<std::string> split_key(const std::string& key) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t p = key.find('.'); p != std::string::npos; p = key.find('.', start)) {
    parts.push_back(key.substr(start, p - start));
    start = p + 1;
  }
  parts.push_back(key.substr(start));
  return parts;
}

}  // namespace

Config Config::defaults() { return build("", {}, "<defaults>"); }

Config Config::load(const std::string& yaml_path, const std::vector<std::string>& overrides) {
  return build(read_input_file<ConfigError>(yaml_path, "the config file", kMaxConfigBytes), overrides, yaml_path);
}

Config Config::from_string(const std::string& yaml_text, const std::vector<std::string>& overrides,
                           const std::string& origin_name) {
  return build(yaml_text, overrides, origin_name);
}

Config Config::build(const std::string& yaml_text, const std::vector<std::string>& overrides,
                     const std::string& origin_name) {
  Config c;
  c.origin_ = origin_name;
  for (const KeySpec& s : config::schema()) c.values_[s.key] = s.default_value;

  const YAML::Node root = load_single_document(yaml_text, origin_name);
  Layer file;
  Source file_src{origin_name, "", &yaml_text};
  apply(file, "", root, file_src, root);
  for (auto& [k, v] : file.values) c.values_[k] = v;
  c.where_ = file.where;
  // An empty list (as the annotated example writes it) gives no gates: only a non-empty one clashes.
  // Likewise a model.gate.* key at its default (a resolved config.yaml writes every key) changes
  // nothing and does not clash.
  if (file.values.count(kGates) && !file.values.at(kGates).empty()) {
    for (const auto& [k, w] : file.where)
      if (k.rfind(kGatePrefix, 0) == 0 && file.values.at(k) != config::find_key(k)->default_value)
        fail(w, std::string("model.gate and model.gates are both given (model.gates at ") + file.where.at(kGates) +
                    "): model.gate is the one-gate shorthand, model.gates the list; keep one");
  }

  for (const std::string& ov : overrides) {
    const std::size_t eq = ov.find('=');
    if (eq == std::string::npos || eq == 0)
      throw ConfigError("malformed override '" + ov + "': expected key.path=value (e.g. optim.lr=3e-4)");
    const std::string key = ov.substr(0, eq);
    const std::string value_text = ov.substr(eq + 1);
    Source src{origin_name, ov, &value_text};
    YAML::Node value;
    try {
      value = YAML::Load(value_text);
    } catch (const YAML::Exception& e) {
      fail(src.at(value), "value is not valid YAML: " + e.msg);
    }
    if (!config::find_key(key) && !config::is_section(key)) fail(src.at(value), unknown_key(key));
    Layer layer;
    apply(layer, key, value, src, value);
    // An override of one form of the gates replaces the other form from the file (model.gates=[]
    // too: it is how an ablation's baseline cell says "no gates" over a gated base config).
    for (const auto& kv : layer.values) {
      const std::string& k = kv.first;
      if (k == kGates)
        c.reset_keys_with_prefix(kGatePrefix);
      else if (k.rfind(kGatePrefix, 0) == 0)
        c.reset_keys_with_prefix(kGates);
    }
    for (auto& [k, v] : layer.values) c.values_[k] = v;
    for (auto& [k, w] : layer.where) c.where_[k] = w;
  }
  c.validate_whole();
  return c;
}

void Config::reset_keys_with_prefix(const std::string& prefix) {
  for (const KeySpec& s : config::schema()) {
    if (s.key.rfind(prefix, 0) != 0) continue;
    values_[s.key] = s.default_value;
    where_.erase(s.key);
  }
}

void Config::validate_whole() const {
  // Cross-key rules that the per-key schema cannot express live in ModelConfig::validate (shape
  // and gate rules) and here; its ValueError starts with the key, which locates the line.
  try {
    model_config().validate();
  } catch (const ValueError& e) {
    // Point at the first key the message names that the user set (the rule may be broken by a
    // key left at its default, e.g. n_embd % n_head with n_head overridden).
    const std::string msg = e.what();
    std::size_t best_pos = std::string::npos;
    std::string at = origin_;
    for (const auto& [key, w] : where_) {
      const std::size_t pos = msg.find(key);
      if (pos < best_pos) {
        best_pos = pos;
        at = w;
      }
    }
    throw ConfigError(at + ": " + msg);
  }
  check_run_name();
  const std::string kind = get_string("data.kind");
  if ((kind == "text" || kind == "tokens") && get_string("data.path").empty())
    throw ConfigError(where("data.kind") + ": data.path must be set when data.kind is " + kind);
}

void Config::check_run_name() const {
  // run.dir defaults to runs/<run.name>: a name with a '/' (or a bare "..") would put the run
  // somewhere else ("../../escape" outside runs/, "/etc/passwd" under runs/etc/).
  const std::string name = get_string("run.name");
  std::string problem;
  if (name.empty() && get_string("run.dir").empty())
    problem = "is empty";
  else if (name.find('/') != std::string::npos)
    problem = "contains '/'";
  else if (name == "." || name == "..")
    problem = "is '" + name + "'";
  for (char c : name)
    if (problem.empty() && static_cast<unsigned char>(c) < 0x20) problem = "contains a control character";
  if (!problem.empty())
    throw ConfigError(where("run.name") + ": run.name " + json(name).dump() + " " + problem +
                      ": it must be one folder name (the run goes to runs/<run.name>); set run.dir for another place");
}

namespace {

const KeySpec& spec_of(const std::string& key) {
  const KeySpec* s = config::find_key(key);
  if (!s) throw ConfigError(unknown_key(key));
  return *s;
}

[[noreturn]] void wrong_type(const std::string& key, const char* getter, const json& v) {
  throw ConfigError(std::string(getter) + ": " + key + " holds " + v.dump() + ", not the requested type");
}

}  // namespace

const json& Config::value(const std::string& key) const {
  spec_of(key);
  return values_.at(key);
}

std::int64_t Config::get_int(const std::string& key) const {
  const json& v = value(key);
  if (!v.is_number_integer()) wrong_type(key, "get_int", v);
  return v.get<std::int64_t>();
}

double Config::get_double(const std::string& key) const {
  const json& v = value(key);
  if (!v.is_number()) wrong_type(key, "get_double", v);
  return v.get<double>();
}

bool Config::get_bool(const std::string& key) const {
  const json& v = value(key);
  if (!v.is_boolean()) wrong_type(key, "get_bool", v);
  return v.get<bool>();
}

std::string Config::get_string(const std::string& key) const {
  const json& v = value(key);
  if (!v.is_string()) wrong_type(key, "get_string", v);
  return v.get<std::string>();
}

std::vector<std::int64_t> Config::get_int_list(const std::string& key) const {
  const json& v = value(key);
  std::vector<std::int64_t> out;
  if (!v.is_array()) wrong_type(key, "get_int_list", v);
  for (const json& e : v) {
    if (!e.is_number_integer()) wrong_type(key, "get_int_list", v);
    out.push_back(e.get<std::int64_t>());
  }
  return out;
}

std::vector<double> Config::get_double_list(const std::string& key) const {
  const json& v = value(key);
  std::vector<double> out;
  if (!v.is_array()) wrong_type(key, "get_double_list", v);
  for (const json& e : v) {
    if (!e.is_number()) wrong_type(key, "get_double_list", v);
    out.push_back(e.get<double>());
  }
  return out;
}

bool Config::has(const std::string& key) const {
  const KeySpec* s = config::find_key(key);
  return s && !values_.at(key).is_null();
}

std::string Config::where(const std::string& key) const {
  auto it = where_.find(key);
  return it == where_.end() ? origin_ : it->second;
}

models::ModelConfig Config::model_config() const {
  models::ModelConfig m;
  m.vocab_size = get_int("model.vocab_size");
  m.block_size = get_int("model.block_size");
  m.n_layer = get_int("model.n_layer");
  m.n_head = get_int("model.n_head");
  m.n_embd = get_int("model.n_embd");
  // The shorthand: the typed keys every gate entry has, and the rest of model.gate.* as options
  // (which the kind checks); set_keys are the ones the file or an override set to a non-default.
  models::GateConfig& g = m.gate;
  g.kind = get_string("model.gate.kind");
  g.all_layers = value("model.gate.layers").is_string();
  if (!g.all_layers) g.layers = get_int_list("model.gate.layers");
  g.activation = get_string("model.gate.activation");
  g.temperature = get_double("model.gate.temperature");
  g.init_bias =
      has("model.gate.init_bias") ? get_double("model.gate.init_bias") : std::numeric_limits<double>::quiet_NaN();
  g.init_weight = get_string("model.gate.init_weight");
  static const std::set<std::string> typed = {"kind",        "layers",    "activation",
                                              "temperature", "init_bias", "init_weight"};
  for (const KeySpec& s : config::schema()) {
    if (s.key.rfind(kGatePrefix, 0) != 0) continue;
    const std::string leaf = s.key.substr(std::string(kGatePrefix).size());
    if (!typed.count(leaf)) g.options[leaf] = value(s.key);
    // A key written at its default changes nothing, so it cannot mislead (the annotated example
    // writes them all); a key set to anything else must mean something for the kind.
    if (where_.count(s.key) && values_.at(s.key) != s.default_value) g.set_keys.push_back(leaf);
  }
  const json& entries = value(kGates);
  for (std::size_t i = 0; i < entries.size(); ++i)
    m.gates.push_back(models::gate_from_json(entries[i], std::string(kGates) + "[" + std::to_string(i) + "]", true));
  return m;
}

std::vector<ParamGroupSpec> Config::param_groups() const {
  std::vector<ParamGroupSpec> out;
  for (const json& g : value("optim.param_groups")) out.push_back(param_group_options(g));
  return out;
}

std::string Config::run_dir() const {
  const std::string dir = get_string("run.dir");
  return dir.empty() ? "runs/" + get_string("run.name") : dir;
}

std::string Config::to_yaml() const {
  std::string out;
  std::vector<std::string> open;  // the sections the previous key was nested in
  for (const KeySpec& s : config::schema()) {
    std::vector<std::string> parts = split_key(s.key);
    const std::string leaf = parts.back();
    parts.pop_back();
    std::size_t common = 0;
    while (common < open.size() && common < parts.size() && open[common] == parts[common]) ++common;
    for (std::size_t d = common; d < parts.size(); ++d) out += std::string(2 * d, ' ') + parts[d] + ":\n";
    open = parts;
    out += std::string(2 * parts.size(), ' ') + leaf + ": " + format_value(values_.at(s.key)) + "\n";
  }
  return out;
}

json Config::to_json() const {
  json out = json::object();
  for (const auto& [key, v] : values_) {
    json* node = &out;
    for (const std::string& part : split_key(key)) node = &(*node)[part];
    *node = v;
  }
  return out;
}

}  // namespace gattn
