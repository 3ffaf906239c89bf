// The ablation file of `gattn ablate` (base config, overrides for every cell, a grid whose
// Cartesian product is the cells) and what follows from it: validation against the config schema,
// the cells in order with readable names, and each cell's train overrides.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor/error.h"

namespace gattn::recipes {

// Bad command-line input that is not a config file's fault (exit 2, docs/cli.md).
class UsageError : public Error {
 public:
  using Error::Error;
};

// The most cells one ablation file may expand to (each is a training run).
inline constexpr std::uint64_t kMaxAblationCells = 100000;

struct GridAxis {
  std::string key;                  // dotted config key, e.g. model.gate.kind
  std::vector<std::string> values;  // each as a YAML flow value ("none", "0", "[0, 16]")
};

struct AblationSpec {
  std::string path;                    // the ablation file, for messages
  std::string base;                    // the training config every cell starts from
  std::vector<std::string> overrides;  // "key=value" for every cell, in file order
  std::vector<GridAxis> grid;          // in file order; the last axis varies fastest
};

struct Cell {
  std::string name;                                        // e.g. kind-output_seed-1
  std::vector<std::pair<std::string, std::string>> point;  // (grid key, value) per axis
  // The grid point as train overrides ("model.gate.kind=output", "seed=1").
  std::vector<std::string> overrides() const;
};

// Reads and checks an ablation file: `base` (a path), `overrides` (a map of dotted keys to values)
// and `grid` (a map of dotted keys to non-empty lists). An unknown top-level key, an empty or
// missing grid, a key that is not a config key, a list that is empty, run.dir / run.name (which
// ablate sets per cell), or a grid of more than kMaxAblationCells cells throws ConfigError naming
// the file line. The file is read as an input file (framework/base/input_file.h).
AblationSpec load_ablation(const std::string& path);
// The same from text; `origin` stands for the file name in messages.
AblationSpec parse_ablation(const std::string& yaml_text, const std::string& origin);

// The cells: the Cartesian product of the grid axes, the last axis fastest. Throws ConfigError when
// two cells would get the same name.
std::vector<Cell> expand_grid(const std::vector<GridAxis>& grid);

// A cell's directory name: "<key>-<value>" per axis joined by '_', where <key> is the key's last
// dotted part (the whole key with '.' as '-' when two axes share a last part) and characters other
// than letters, digits, '.', '+' and '-' become '-'.
std::string cell_name(const std::vector<GridAxis>& grid, const std::vector<std::string>& values);

}  // namespace gattn::recipes
