// AdamW: group assignment and validation at construction; each step computes every parameter's
// coefficients and hands them all to one multi-tensor op (ops/adamw.h), which updates the CPU
// parameters in one parallel region and the CUDA ones in one launch.
#include "framework/optim/adamw.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/autograd/grad_mode.h"
#include "framework/optim/glob.h"
#include "framework/optim/param_group_rules.h"
#include "ops/adamw.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"

namespace gattn::optim {

namespace {

std::string group_key(std::size_t i, const std::string& name) {
  std::string key = "optim.param_groups[";
  key.append(std::to_string(i)).append("] (").append(name).append(")");
  return key;
}

void require(bool ok, const std::string& key, const std::string& what, double value) {
  if (!ok) throw OptimizerConfigError(key + ": " + what + ", got " + std::to_string(value));
}

// The parameter's grad, checked against it; undefined when there is none.
Tensor checked_grad(const std::string& name, const Tensor& p) {
  Tensor g = p.grad();
  if (!g.defined()) return g;
  if (g.dtype() != p.dtype())
    throw DTypeError("AdamW: grad of " + name + " is " + dtype_name(g.dtype()) + " but the parameter is " +
                     dtype_name(p.dtype()));
  if (g.shape() != p.shape())
    throw ShapeError("AdamW: grad of " + name + " has shape " + shape_str(g.shape()) + " but the parameter has " +
                     shape_str(p.shape()));
  return g;
}

}  // namespace

AdamW::AdamW(NamedParameters params, AdamWOptions options) : options_(std::move(options)), params_(std::move(params)) {
  const AdamWOptions& o = options_;
  options_.schedule.lr = o.lr;
  try {
    validate(options_.schedule);
  } catch (const ValueError& e) {
    throw OptimizerConfigError(e.what());
  }
  require(o.beta1 >= 0.0 && o.beta1 < 1.0, "optim.betas[0]", "must be in [0, 1)", o.beta1);
  require(o.beta2 >= 0.0 && o.beta2 < 1.0, "optim.betas[1]", "must be in [0, 1)", o.beta2);
  require(o.eps > 0.0 && std::isfinite(o.eps), "optim.eps", "must be a finite number > 0", o.eps);
  require(o.weight_decay >= 0.0 && std::isfinite(o.weight_decay), "optim.weight_decay", "must be a finite number >= 0",
          o.weight_decay);
  require(o.grad_clip >= 0.0 && std::isfinite(o.grad_clip), "optim.grad_clip", "must be a finite number >= 0 (0 = off)",
          o.grad_clip);

  groups_.push_back(Group{kDefaultGroup, std::nullopt, std::nullopt, o.weight_decay, 0, {}});
  for (std::size_t gi = 0; gi < o.groups.size(); ++gi) {
    const ParamGroupOptions& g = o.groups[gi];
    const std::string key = group_key(gi, g.name);
    if (auto problem = param_group_problem(g))
      throw OptimizerConfigError(key + "." + problem->field + ": " + problem->message);
    for (const Group& other : groups_)
      if (other.name == g.name)
        throw OptimizerConfigError(key + ": the name '" + g.name + "' is " +
                                   (g.name == kDefaultGroup ? "reserved for the ungrouped parameters" : "used twice"));
    groups_.push_back(Group{g.name, g.lr, g.lr_scale, g.weight_decay.value_or(o.weight_decay), g.freeze_steps, {}});
  }

  if (o.require_glob_matches) {
    std::vector<std::string> names;
    for (const auto& [name, p] : params_) names.push_back(name);
    check_globs_match(o.groups, names);
  }

  states_.reserve(params_.size());
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const auto& [name, p] = params_[i];
    if (!index_.emplace(name, i).second)
      throw OptimizerConfigError("AdamW: parameter name '" + name + "' appears twice");
    if (!p.defined()) throw OptimizerConfigError("AdamW: parameter '" + name + "' is an undefined tensor");
    if (p.device() == Device::cuda && p.dtype() != DType::f32)
      throw DTypeError("AdamW: parameter " + name + " is " + dtype_name(p.dtype()) +
                       " on cuda; the CUDA update takes f32");
    if (p.dtype() != DType::f32 && p.dtype() != DType::f64)
      throw DTypeError("AdamW: parameter " + name + " is " + dtype_name(p.dtype()) + "; expected f32 or f64");

    std::size_t owner = 0;
    for (std::size_t gi = 0; gi < o.groups.size() && owner == 0; ++gi)
      for (const std::string& pattern : o.groups[gi].match)
        if (glob_match(pattern, name)) {
          owner = gi + 1;
          break;
        }
    group_index_.push_back(owner);
    groups_[owner].members.push_back(i);
    states_.push_back(ParamState{Tensor::zeros(p.shape(), p.dtype(), p.device()),
                                 Tensor::zeros(p.shape(), p.dtype(), p.device()), 0});
  }
}

void check_globs_match(const std::vector<ParamGroupOptions>& groups, const std::vector<std::string>& names) {
  // Every glob must match some parameter, even one an earlier group already took: a typo is an
  // error either way, and a shadowed glob is not a typo.
  for (std::size_t gi = 0; gi < groups.size(); ++gi)
    for (const std::string& pattern : groups[gi].match) {
      bool any = false;
      for (const std::string& name : names) any = any || glob_match(pattern, name);
      if (!any)
        throw OptimizerConfigError(group_key(gi, groups[gi].name) + ": glob '" + pattern + "' matches no parameter");
    }
}

std::string group_for(const std::string& name, const std::vector<ParamGroupOptions>& groups) {
  for (const ParamGroupOptions& g : groups)
    for (const std::string& pattern : g.match)
      if (glob_match(pattern, name)) return g.name;
  return AdamW::kDefaultGroup;
}

double AdamW::clip_grad_norm() {
  const double norm = std::sqrt(grad_sum_of_squares());
  if (options_.grad_clip > 0.0 && std::isfinite(norm) && norm > options_.grad_clip)
    scale_grads(options_.grad_clip / norm);
  return norm;
}

double AdamW::grad_sum_of_squares() {
  std::vector<Tensor> grads;  // in parameter order: the sum's order, and so its bits, are fixed
  for (const auto& [name, p] : params_) {
    Tensor g = checked_grad(name, p);
    if (g.defined()) grads.push_back(std::move(g));
  }
  return ops::sum_of_squares(grads);
}

void AdamW::scale_grads(double factor) {
  for (auto& [name, p] : params_) {
    Tensor g = p.grad();
    if (g.defined()) ops::scale_(g, factor);
  }
}

void AdamW::step(std::int64_t global_step) {
  std::vector<ops::AdamWParam> updates;  // every parameter of this step: one op call
  for (const Group& group : groups_) {
    if (global_step < group.freeze_steps) continue;  // frozen: not even t moves
    const double lr = group_lr(group, global_step);
    for (std::size_t i : group.members) {
      Tensor& p = params_[i].second;
      Tensor g = checked_grad(params_[i].first, p);
      if (!g.defined()) continue;
      ParamState& s = states_[i];
      s.t += 1;
      const double t = static_cast<double>(s.t);
      const adamw::ParamCoeffs coeffs{1.0 - lr * group.weight_decay, lr / (1.0 - std::pow(options_.beta1, t)),
                                      1.0 / std::sqrt(1.0 - std::pow(options_.beta2, t))};
      updates.push_back({p, g, s.exp_avg, s.exp_avg_sq, coeffs});
    }
  }
  ops::adamw_update_(updates, adamw::Settings{options_.beta1, options_.beta2, options_.eps});
}

void AdamW::zero_grad() {
  for (auto& [name, p] : params_) p.zero_grad();
}

std::string AdamW::first_non_finite_grad() const {
  // On the rare path where the norm already came out non-finite: one check (on CUDA, one sync) per grad.
  for (const auto& [name, p] : params_) {
    const Tensor g = p.grad();
    if (g.defined() && !ops::all_finite(g)) return name;
  }
  return "";
}

std::size_t AdamW::index_of(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) throw ValueError("AdamW: no parameter named '" + name + "'");
  return it->second;
}

const std::string& AdamW::group_of(const std::string& name) const { return groups_[group_index_[index_of(name)]].name; }

std::vector<std::string> AdamW::group_names() const {
  std::vector<std::string> names;
  for (const Group& g : groups_) names.push_back(g.name);
  return names;
}

const AdamW::Group& AdamW::group_named(const std::string& group) const {
  for (const Group& g : groups_)
    if (g.name == group) return g;
  throw ValueError("AdamW: no parameter group named '" + group + "'");
}

double AdamW::group_lr(const Group& g, std::int64_t step) const {
  if (step < g.freeze_steps) return 0.0;
  return g.lr ? *g.lr : g.lr_scale.value_or(1.0) * scheduled_lr(options_.schedule, step);
}

double AdamW::lr_of_group(const std::string& group, std::int64_t step) const {
  return group_lr(group_named(group), step);
}

std::vector<std::pair<std::string, double>> AdamW::current_lrs(std::int64_t step) const {
  std::vector<std::pair<std::string, double>> out;
  for (const Group& g : groups_) out.emplace_back(g.name, group_lr(g, step));
  return out;
}

const ParamState& AdamW::state(const std::string& name) const { return states_[index_of(name)]; }
ParamState& AdamW::state(const std::string& name) { return states_[index_of(name)]; }

}  // namespace gattn::optim
