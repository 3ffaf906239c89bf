// The rules one optimizer parameter group must follow, in one place: the config loader applies them
// (naming the file line of the field) and so does AdamW (for groups built in code), with the same
// bounds and the same words.
#pragma once
#include <optional>
#include <string>

#include "framework/optim/param_group.h"

namespace gattn::optim {

struct ParamGroupProblem {
  std::string field;    // "name", "match", "lr", "lr_scale", "weight_decay" or "freeze_steps"
  std::string message;  // e.g. "must be a finite number > 0, got 0"
};

// The first rule `g` breaks, or nullopt. (Unique names and globs that match are checked where the
// groups and the parameters are known.)
std::optional<ParamGroupProblem> param_group_problem(const ParamGroupOptions& g);

}  // namespace gattn::optim
