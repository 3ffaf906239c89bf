// Writing values so YAML readers (PyYAML too) read them back as the same type: doubles always
// with a '.', strings quoted when they could be misread.
#include "framework/config/yaml_format.h"

#include <cctype>
#include <charconv>
#include <cstdint>
#include <set>
#include <vector>

#include "framework/config/schema.h"

namespace gattn::config {

using nlohmann::json;

namespace {

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

}  // namespace

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
    for (const std::string& f : param_group_keys())
      if (v.contains(f)) fields.push_back(f);
  } else {
    for (auto it = v.begin(); it != v.end(); ++it) fields.push_back(it.key());
  }
  std::string out = "{";
  for (std::size_t i = 0; i < fields.size(); ++i)
    out += (i ? ", " : "") + fields[i] + ": " + format_value(v[fields[i]]);
  return out + "}";
}

}  // namespace gattn::config
