// How a recipe (sub-command) plugs into the gattn CLI: it adds its options to a CLI11 sub-app and
// returns the action main() runs when that sub-command was chosen.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>

namespace gattn::recipes {

using Action = std::function<int()>;

// Each returns the action to run if its sub-command is selected.
Action add_train(CLI::App& app);
Action add_eval(CLI::App& app);
Action add_inspect(CLI::App& app);
Action add_sample(CLI::App& app);
Action add_ablate(CLI::App& app);
Action add_report(CLI::App& app);
Action add_bench(CLI::App& app);
Action add_gates(CLI::App& app);
Action add_tokenize(CLI::App& app);
Action add_config(CLI::App& app);

}  // namespace gattn::recipes
