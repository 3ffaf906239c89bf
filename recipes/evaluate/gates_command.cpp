// `gattn gates [--names]`: the registered gate kinds, as the markdown table docs/gates.md holds, or
// their names one per line (for scripts that loop over kinds).
#include <iostream>
#include <memory>

#include "models/config.h"
#include "models/gating/registry.h"
#include "recipes/common/recipe.h"

namespace gattn::recipes {

Action add_gates(CLI::App& app) {
  auto names_only = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("gates", "list the gate kinds this build knows (the docs/gates.md table)");
  cmd->add_flag("--names", *names_only, "print only the kind names, one per line (none first)");
  return [names_only] {
    if (*names_only) {
      std::cout << models::kNoGate << "\n";
      for (const models::GateKindSpec* k : models::gate_kinds()) std::cout << k->name << "\n";
    } else {
      std::cout << models::gate_kinds_markdown();
    }
    return 0;
  };
}

}  // namespace gattn::recipes
