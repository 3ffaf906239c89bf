// `gattn bench generate`: a checkpoint's quality and generation speed under each KV-cache policy
// and budget (docs/inference.md): teacher-forced val loss (and answer accuracy for synthetic tasks)
// through the cache, and free greedy generation's tokens/s and KV memory.
#pragma once
#include <CLI/CLI.hpp>

#include "recipes/common/recipe.h"

namespace gattn::recipes {

// Adds `generate` under `gattn bench`; the action runs it.
Action add_bench_generate(CLI::App& bench);

}  // namespace gattn::recipes
