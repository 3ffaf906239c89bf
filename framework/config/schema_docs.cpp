// The annotated example and the key table, both read off the schema so they cannot drift from it.
#include "framework/config/schema_docs.h"

#include <sstream>
#include <vector>

#include "framework/config/yaml_format.h"

namespace gattn::config {

namespace {

// The column where a key line's comment starts (a longer line gets one space), so the comments of
// most keys line up.
constexpr std::size_t kCommentColumn = 33;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string part;
  std::istringstream in(s);
  while (std::getline(in, part, sep)) out.push_back(part);
  return out;
}

std::string num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// "≥ 0", "> 0", "in [0, 1)", "≤ 1" or "".
std::string bounds(const KeySpec& s) {
  if (s.min && s.max)
    return "in " + std::string(s.min_exclusive ? "(" : "[") + num(*s.min) + ", " + num(*s.max) +
           (s.max_exclusive ? ")" : "]");
  if (s.min) return std::string(s.min_exclusive ? "> " : "≥ ") + num(*s.min);
  if (s.max) return std::string(s.max_exclusive ? "< " : "≤ ") + num(*s.max);
  return "";
}

std::string with_bounds(std::string what, const KeySpec& s) {
  const std::string b = bounds(s);
  return b.empty() ? what : what + " " + b;
}

std::string values_of(const KeySpec& s) {
  std::string out;
  switch (s.type) {
    case KeyType::integer:
      out = with_bounds("integer", s);
      break;
    case KeyType::number:
      out = with_bounds("number", s);
      break;
    case KeyType::boolean:
      out = "`true`, `false`";
      break;
    case KeyType::string:
      out = "text";
      break;
    case KeyType::choice:
      for (const std::string& c : s.choices) out += (out.empty() ? "`" : ", `") + c + "`";
      break;
    case KeyType::int_list:
      out = with_bounds("list of integers", s);
      break;
    case KeyType::number_list:
      out = with_bounds(s.length ? "list of " + std::to_string(*s.length) + " numbers" : "list of numbers", s);
      break;
    case KeyType::all_or_int_list:
      out = with_bounds("`all` or a list of " + s.entries, s);
      break;
    case KeyType::param_groups:
      out = "list of parameter groups";
      break;
    case KeyType::map_list:
      out = "list of " + s.entries + " `" + s.entry_form + "`";
      break;
  }
  if (s.nullable) out += ", or `null`";
  return out;
}

// A table cell: a '|' would end it, and "<run.name>" would read as an HTML tag.
std::string cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|' || c == '<') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::string example_yaml(const Schema& schema) {
  std::string out;
  std::vector<std::string> open;  // the sections the last key was in, outermost first
  for (const KeySpec& s : schema.keys()) {
    const std::vector<std::string> parts = split(s.key, '.');
    std::size_t same = 0;
    while (same < open.size() && same + 1 < parts.size() && open[same] == parts[same]) ++same;
    open.resize(same);
    for (std::size_t i = same; i + 1 < parts.size(); ++i) {
      out += std::string(2 * i, ' ') + parts[i] + ":\n";
      open.push_back(parts[i]);
    }
    const std::string indent(2 * open.size(), ' ');
    std::string line = indent + parts.back() + ": " + format_value(s.default_value);
    line += std::string(line.size() < kCommentColumn ? kCommentColumn - line.size() : 1, ' ');
    out += line + "# " + s.doc + "\n";
    if (!s.example.empty()) {
      out += indent + "# " + parts.back() + ":\n";
      for (const std::string& l : split(s.example, '\n')) out += indent + "# " + l + "\n";
    }
  }
  return out;
}

std::string keys_markdown(const Schema& schema) {
  std::string out = "| key | default | values | what it sets |\n| --- | --- | --- | --- |\n";
  for (const KeySpec& s : schema.keys())
    out += "| `" + s.key + "` | `" + format_value(s.default_value) + "` | " + cell(values_of(s)) + " | " + cell(s.doc) +
           " |\n";
  return out;
}

}  // namespace gattn::config
