// The parameter-group rules.
#include "framework/optim/param_group_rules.h"

#include <cmath>
#include <sstream>

namespace gattn::optim {

namespace {

std::string got(double v) {
  std::ostringstream os;
  os << v;
  return ", got " + os.str();
}

}  // namespace

std::optional<ParamGroupProblem> param_group_problem(const ParamGroupOptions& g) {
  if (g.name.empty()) return ParamGroupProblem{"name", "must be a non-empty name"};
  if (g.match.empty()) return ParamGroupProblem{"match", "must be a non-empty list of parameter-name globs"};
  // A rate of 0 would freeze the group for the whole run: freeze_steps says that explicitly.
  if (g.lr && !(*g.lr > 0 && std::isfinite(*g.lr)))
    return ParamGroupProblem{"lr", "must be a finite number > 0" + got(*g.lr)};
  if (g.lr_scale && !(*g.lr_scale > 0 && std::isfinite(*g.lr_scale)))
    return ParamGroupProblem{"lr_scale", "must be a finite number > 0" + got(*g.lr_scale)};
  if (g.lr && g.lr_scale)
    return ParamGroupProblem{"lr_scale",
                             "given together with lr; use one (lr is absolute, lr_scale scales the schedule)"};
  if (g.weight_decay && !(*g.weight_decay >= 0 && std::isfinite(*g.weight_decay)))
    return ParamGroupProblem{"weight_decay", "must be a finite number >= 0" + got(*g.weight_decay)};
  if (g.freeze_steps < 0)
    return ParamGroupProblem{"freeze_steps", "must be >= 0" + got(static_cast<double>(g.freeze_steps))};
  return std::nullopt;
}

}  // namespace gattn::optim
