// Parsing, validating and expanding ablation files.
#include "recipes/ablate/ablation.h"

#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <set>

#include "framework/base/input_file.h"
#include "framework/config/errors.h"
#include "framework/config/schema.h"
#include "framework/config/yaml_document.h"
#include "framework/config/yaml_position.h"
#include "recipes/common/run_schema.h"

namespace gattn::recipes {

namespace {

std::string at(const std::string& origin, const YAML::Node& n) { return yaml_position(origin, n); }

// A value as one line of YAML flow text, as an override takes it.
std::string flow(const YAML::Node& n) {
  if (n.IsScalar()) return n.Scalar();
  YAML::Emitter out;
  out << YAML::Flow << n;
  return out.c_str();
}

// A config key the grid or the overrides may set: any key or section of the schema except the run's
// name and directory, which ablate sets for each cell.
void check_key(const std::string& key, const std::string& where, const std::string& what) {
  if (key == "run.dir" || key == "run.name" || key == "run")
    throw ConfigError(where + ": " + what + " '" + key +
                      "' is set by gattn ablate for each cell (cells/<name>); remove it");
  if (run_schema().find(key) || run_schema().is_section(key)) return;
  std::string msg = where + ": " + what + " '" + key + "' is not a config key";
  const std::string near = run_schema().closest_key(key);
  if (!near.empty()) msg += " (did you mean '" + near + "'?)";
  throw ConfigError(msg);
}

std::string sanitize(const std::string& text) {
  std::string out;
  for (char c : text) {
    const bool keep =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '+' || c == '-';
    out.push_back(keep ? c : '-');
  }
  // Lists ("[0, 16]") leave runs of '-' at the ends and between items: trim and collapse them.
  std::string collapsed;
  for (char c : out)
    if (!(c == '-' && (collapsed.empty() || collapsed.back() == '-'))) collapsed.push_back(c);
  while (!collapsed.empty() && collapsed.back() == '-') collapsed.pop_back();
  return collapsed.empty() ? "x" : collapsed;
}

std::string last_part(const std::string& key) {
  const std::size_t dot = key.rfind('.');
  return dot == std::string::npos ? key : key.substr(dot + 1);
}

// Every cell is a training run and is held in memory with its name and overrides: a grid of
// millions of cells (a typo such as a 7-million-item range) is refused before it is expanded.
void check_grid_size(const std::vector<GridAxis>& grid, const std::string& where) {
  double cells = 1;  // a double: a product of many axes may pass 2^64
  std::string product;
  for (const GridAxis& axis : grid) {
    cells *= static_cast<double>(axis.values.size());
    if (!product.empty()) product.append(" x ");
    product.append(std::to_string(axis.values.size()));
  }
  if (cells <= static_cast<double>(kMaxAblationCells)) return;
  char count[32];
  std::snprintf(count, sizeof count, "%.0f", cells);
  throw ConfigError(where + ": the grid has " + count + " cells (" + product + " values), more than the " +
                    std::to_string(kMaxAblationCells) + " one ablation may run; split it into several ablation files");
}

}  // namespace

std::vector<std::string> Cell::overrides() const {
  std::vector<std::string> out;
  for (const auto& [key, value] : point) out.push_back(key + "=" + value);
  return out;
}

AblationSpec parse_ablation(const std::string& yaml_text, const std::string& origin) {
  const YAML::Node root = load_single_document(yaml_text, origin);
  if (!root.IsMap()) throw ConfigError(origin + ": an ablation file is a map with base, overrides and grid");
  AblationSpec spec;
  spec.path = origin;
  for (const auto& item : root) {
    const std::string key = item.first.as<std::string>();
    if (key != "base" && key != "overrides" && key != "grid")
      throw ConfigError(at(origin, item.first) + ": unknown key '" + key +
                        "' (an ablation file has base, overrides, grid)");
  }
  const YAML::Node base = root["base"];
  if (!base || !base.IsScalar() || base.Scalar().empty())
    throw ConfigError(origin + ": 'base' is missing: name the training config every cell starts from");
  spec.base = base.Scalar();

  const YAML::Node overrides = root["overrides"];
  if (overrides && !overrides.IsNull()) {
    if (!overrides.IsMap())
      throw ConfigError(at(origin, overrides) + ": 'overrides' must map dotted config keys to values");
    for (const auto& item : overrides) {
      const std::string key = item.first.as<std::string>();
      check_key(key, at(origin, item.first), "override");
      spec.overrides.push_back(key + "=" + flow(item.second));
    }
  }

  const YAML::Node grid = root["grid"];
  if (!grid || grid.IsNull() || (grid.IsMap() && grid.size() == 0))
    throw ConfigError(origin +
                      ": the grid is empty: give at least one config key with a list of values (e.g. "
                      "model.gate.kind: [none, output])");
  if (!grid.IsMap()) throw ConfigError(at(origin, grid) + ": 'grid' must map dotted config keys to lists of values");
  for (const auto& item : grid) {
    GridAxis axis;
    axis.key = item.first.as<std::string>();
    check_key(axis.key, at(origin, item.first), "grid key");
    if (!item.second.IsSequence() || item.second.size() == 0)
      throw ConfigError(at(origin, item.first) + ": grid key '" + axis.key + "' needs a non-empty list of values");
    for (const auto& v : item.second) axis.values.push_back(flow(v));
    spec.grid.push_back(std::move(axis));
  }
  check_grid_size(spec.grid, at(origin, grid));
  return spec;
}

AblationSpec load_ablation(const std::string& path) {
  return parse_ablation(read_input_file<ConfigError>(path, "the ablation file", kMaxConfigBytes), path);
}

std::string cell_name(const std::vector<GridAxis>& grid, const std::vector<std::string>& values) {
  std::string name;
  for (std::size_t a = 0; a < grid.size() && a < values.size(); ++a) {
    std::string key = last_part(grid[a].key);
    for (std::size_t b = 0; b < grid.size(); ++b)
      if (b != a && last_part(grid[b].key) == key) {
        key = grid[a].key;
        break;
      }
    if (!name.empty()) name.push_back('_');
    name += sanitize(key) + "-" + sanitize(values[a]);
  }
  return name;
}

std::vector<Cell> expand_grid(const std::vector<GridAxis>& grid) {
  std::vector<Cell> cells;
  if (grid.empty()) return cells;
  std::vector<std::size_t> index(grid.size(), 0);
  std::set<std::string> names;
  while (true) {
    Cell cell;
    std::vector<std::string> values;
    for (std::size_t a = 0; a < grid.size(); ++a) {
      values.push_back(grid[a].values[index[a]]);
      cell.point.emplace_back(grid[a].key, values.back());
    }
    cell.name = cell_name(grid, values);
    if (!names.insert(cell.name).second)
      throw ConfigError("two grid cells would share the directory name '" + cell.name + "': make the values distinct");
    cells.push_back(std::move(cell));
    // Odometer: the last axis turns fastest.
    std::size_t a = grid.size();
    while (a > 0) {
      --a;
      if (++index[a] < grid[a].values.size()) break;
      index[a] = 0;
      if (a == 0) return cells;
    }
  }
}

}  // namespace gattn::recipes
