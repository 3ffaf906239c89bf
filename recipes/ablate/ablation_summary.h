// The tables `gattn ablate` writes: summary.csv (one row per cell, raw final values) and
// summary.md (one row per grid point without the seed: mean ± std over the seeds). Besides the
// final metrics both give the model's parameters and training FLOPs per token and the KV-cached
// generation tokens/s measured on each cell's final checkpoint (RunRecord).
#pragma once
#include <string>
#include <vector>

#include "recipes/ablate/ablation.h"
#include "recipes/ablate/run_summary.h"

namespace gattn::recipes {

struct CellResult {
  Cell cell;
  RunRecord run;
};

std::string summary_csv(const std::vector<GridAxis>& grid, const std::vector<CellResult>& cells);
// Rows grouped by every grid axis except `seed`, in the order the groups first appear.
std::string summary_markdown(const std::vector<GridAxis>& grid, const std::vector<CellResult>& cells);

}  // namespace gattn::recipes
