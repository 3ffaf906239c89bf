// How a recipe (sub-command) plugs into the gattn CLI: recipes/<family>/<name>_command.cpp defines
//   Action add_<name>(CLI::App& app);
// which adds its options to a CLI11 sub-app of `app` and returns the action main() runs when that
// sub-command was chosen. The build lists every *_command.cpp (cmake/generated_lists.cmake) and main()
// adds them in name order: a new command is one new file.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>

namespace gattn::recipes {

using Action = std::function<int()>;

}  // namespace gattn::recipes
