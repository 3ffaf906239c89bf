// Settings loading: YAML file, then dotted overrides, over the schema defaults; every value is
// type- and range-checked where it is read (framework/config/yaml_value.h) so the error can point at
// its line or override, then the application's rules check the whole.
#include "framework/config/settings.h"

#include <yaml-cpp/yaml.h>

#include "framework/base/input_file.h"
#include "framework/config/yaml_document.h"
#include "framework/config/yaml_format.h"
#include "framework/config/yaml_value.h"

namespace gattn::config {

namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& where, const std::string& msg) { throw ConfigError(where + ": " + msg); }

// One layer of values (the file or one override) and where each came from.
struct Layer {
  std::map<std::string, json> values;
  std::map<std::string, std::string> where;
};

std::string join_key(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

std::string unknown_key(const Schema& schema, const std::string& key) {
  std::string best = schema.closest_key(key);
  return "unknown key '" + key + "'" + (best.empty() ? "" : " (did you mean '" + best + "'?)");
}

// The first schema key inside a section, for the example in a message ("model.vocab_size").
std::string first_key_of(const Schema& schema, const std::string& section) {
  for (const KeySpec& s : schema.keys())
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
void apply(const Schema& schema, Layer& layer, const std::string& key, const YAML::Node& n, const Source& src,
           const YAML::Node& key_node) {
  const std::string at = src.at(key_node);
  if (const KeySpec* s = schema.find(key)) {
    if (src.override_text.empty() && layer.values.count(key)) fail(at, "duplicate key '" + key + "'");
    layer.values[key] = read_value(*s, n, src, at);
    layer.where[key] = at;
    return;
  }
  if (!key.empty() && !schema.is_section(key)) fail(at, unknown_key(schema, key));
  if (!n.IsDefined() || n.IsNull()) {
    // An empty file or section (`optim:` with its keys commented out) keeps the defaults, but
    // `model: null` reads as "no model" and used to train the default one silently: an error.
    if (key.empty() || !written_as_null(n, *src.text)) return;
    fail(at, "'" + key + "' is null: give its keys under it (e.g. " + first_key_of(schema, key) +
                 ": ...), or leave it out");
  }
  if (!n.IsMap())
    fail(at, (key.empty() ? std::string("the config") : "'" + key + "'") + " must be a map of keys, got " + shown(n));
  for (auto it = n.begin(); it != n.end(); ++it) {
    if (!it->first.IsScalar()) fail(src.at(it->first), "keys must be plain names, got " + shown(it->first));
    apply(schema, layer, join_key(key, it->first.Scalar()), it->second, src, it->first);
  }
}

// A file may give one of two exclusive forms, not both. An empty list (as an annotated example
// writes it) gives nothing: only a non-empty one clashes. Likewise a section key at its default (a
// resolved config.yaml writes every key) changes nothing and does not clash.
void check_one_form(const Schema& schema, const ExclusiveForms& forms, const Layer& file) {
  const auto list = file.values.find(forms.list_key);
  if (list == file.values.end() || list->second.empty()) return;
  const std::string prefix = forms.section + ".";
  for (const auto& [k, w] : file.where)
    if (k.rfind(prefix, 0) == 0 && file.values.at(k) != schema.find(k)->default_value)
      fail(w, forms.section + " and " + forms.list_key + " are both given (" + forms.list_key + " at " +
                  file.where.at(forms.list_key) + "): " + forms.hint);
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

[[noreturn]] void wrong_type(const std::string& key, const char* getter, const json& v) {
  throw ConfigError(std::string(getter) + ": " + key + " holds " + v.dump() + ", not the requested type");
}

}  // namespace

Settings::Settings(const Schema& schema, std::string origin) : schema_(&schema), origin_(std::move(origin)) {
  for (const KeySpec& s : schema.keys()) values_[s.key] = s.default_value;
}

Settings Settings::defaults(const Schema& schema, const Rules& rules) {
  return build(schema, rules, "", {}, "<defaults>");
}

Settings Settings::load(const Schema& schema, const Rules& rules, const std::string& yaml_path,
                        const std::vector<std::string>& overrides) {
  return build(schema, rules, read_input_file<ConfigError>(yaml_path, "the config file", kMaxConfigBytes), overrides,
               yaml_path);
}

Settings Settings::from_string(const Schema& schema, const Rules& rules, const std::string& yaml_text,
                               const std::vector<std::string>& overrides, const std::string& origin_name) {
  return build(schema, rules, yaml_text, overrides, origin_name);
}

Settings Settings::build(const Schema& schema, const Rules& rules, const std::string& yaml_text,
                         const std::vector<std::string>& overrides, const std::string& origin_name) {
  Settings c(schema, origin_name);

  const YAML::Node root = load_single_document(yaml_text, origin_name);
  Layer file;
  Source file_src{origin_name, "", &yaml_text};
  apply(schema, file, "", root, file_src, root);
  for (auto& [k, v] : file.values) c.values_[k] = v;
  c.where_ = file.where;
  for (const ExclusiveForms& forms : rules.exclusive_forms) check_one_form(schema, forms, file);

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
    if (!schema.find(key) && !schema.is_section(key)) fail(src.at(value), unknown_key(schema, key));
    Layer layer;
    apply(schema, layer, key, value, src, value);
    // An override of one form replaces the other form from the file. An empty list too: gattn's
    // model.gates=[] over a gated file is how an ablation's baseline cell says "no gates" (docs/config.md).
    for (const ExclusiveForms& forms : rules.exclusive_forms) {
      for (const auto& kv : layer.values) {
        const std::string& k = kv.first;
        if (k == forms.list_key)
          c.reset_keys_with_prefix(forms.section + ".");
        else if (k.rfind(forms.section + ".", 0) == 0)
          c.reset_key(*schema.find(forms.list_key));
      }
    }
    for (auto& [k, v] : layer.values) c.values_[k] = v;
    for (auto& [k, w] : layer.where) c.where_[k] = w;
  }
  c.validate_whole(rules);
  return c;
}

void Settings::reset_key(const KeySpec& spec) {
  values_[spec.key] = spec.default_value;
  where_.erase(spec.key);
}

void Settings::reset_keys_with_prefix(const std::string& prefix) {
  for (const KeySpec& s : schema_->keys())
    if (s.key.rfind(prefix, 0) == 0) reset_key(s);
}

void Settings::validate_whole(const Rules& rules) const {
  if (!rules.validate) return;
  try {
    rules.validate(*this);
  } catch (const ValueError& e) {
    // The rule's message starts with the key it is about. Point at the first key the message
    // names that the user set (the rule may be broken by a key left at its default, e.g.
    // n_embd % n_head with n_head overridden).
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
}

const json& Settings::value(const std::string& key) const {
  if (!schema_->find(key)) throw ConfigError(unknown_key(*schema_, key));
  return values_.at(key);
}

std::int64_t Settings::get_int(const std::string& key) const {
  const json& v = value(key);
  if (!v.is_number_integer()) wrong_type(key, "get_int", v);
  return v.get<std::int64_t>();
}

double Settings::get_double(const std::string& key) const {
  const json& v = value(key);
  if (!v.is_number()) wrong_type(key, "get_double", v);
  return v.get<double>();
}

bool Settings::get_bool(const std::string& key) const {
  const json& v = value(key);
  if (!v.is_boolean()) wrong_type(key, "get_bool", v);
  return v.get<bool>();
}

std::string Settings::get_string(const std::string& key) const {
  const json& v = value(key);
  if (!v.is_string()) wrong_type(key, "get_string", v);
  return v.get<std::string>();
}

std::vector<std::int64_t> Settings::get_int_list(const std::string& key) const {
  const json& v = value(key);
  std::vector<std::int64_t> out;
  if (!v.is_array()) wrong_type(key, "get_int_list", v);
  for (const json& e : v) {
    if (!e.is_number_integer()) wrong_type(key, "get_int_list", v);
    out.push_back(e.get<std::int64_t>());
  }
  return out;
}

std::vector<double> Settings::get_double_list(const std::string& key) const {
  const json& v = value(key);
  std::vector<double> out;
  if (!v.is_array()) wrong_type(key, "get_double_list", v);
  for (const json& e : v) {
    if (!e.is_number()) wrong_type(key, "get_double_list", v);
    out.push_back(e.get<double>());
  }
  return out;
}

std::vector<optim::ParamGroupOptions> Settings::get_param_groups(const std::string& key) const {
  const json& v = value(key);
  if (schema_->find(key)->type != KeyType::param_groups) wrong_type(key, "get_param_groups", v);
  std::vector<optim::ParamGroupOptions> out;
  for (const json& g : v) out.push_back(param_group_options(g));
  return out;
}

bool Settings::has(const std::string& key) const { return schema_->find(key) && !values_.at(key).is_null(); }

std::string Settings::where(const std::string& key) const {
  auto it = where_.find(key);
  return it == where_.end() ? origin_ : it->second;
}

std::string Settings::to_yaml() const {
  std::string out;
  std::vector<std::string> open;  // the sections the previous key was nested in
  for (const KeySpec& s : schema_->keys()) {
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

json Settings::to_json() const {
  json out = json::object();
  for (const auto& [key, v] : values_) {
    json* node = &out;
    for (const std::string& part : split_key(key)) node = &(*node)[part];
    *node = v;
  }
  return out;
}

}  // namespace gattn::config
