// AdamW with decoupled weight decay, glob-matched parameter groups (per-group lr / lr_scale /
// weight_decay / freeze_steps), a learning-rate schedule and global-norm gradient clipping (docs/config.md).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/tensor/error.h"
#include "core/tensor/tensor.h"
#include "framework/optim/param_group.h"
#include "framework/optim/schedule.h"

namespace gattn::optim {

// A bad optimizer configuration (a glob matching nothing, a negative rate); the message names the
// config key, e.g. "optim.param_groups[1] (gates): glob 'blocks.*.attn.gatee.*' matches no parameter".
class OptimizerConfigError : public ValueError {
 public:
  using ValueError::ValueError;
};

struct AdamWOptions {
  double lr = 3e-4;  // peak rate; copied into schedule.lr by the AdamW constructor
  double beta1 = 0.9;
  double beta2 = 0.99;
  double eps = 1e-8;
  double weight_decay = 0.1;
  double grad_clip = 1.0;   // global L2 norm bound; 0 = no clipping
  ScheduleConfig schedule;  // its lr field is overwritten with `lr`
  std::vector<ParamGroupOptions> groups;
  // Every glob must match some parameter (a typo is a config error). A ZeRO-1 shard holds only
  // part of the parameters: it checks the globs against the whole model first and turns this off.
  bool require_glob_matches = true;
};

// The name of the group that takes parameter `name`: the first of `groups` with a matching glob,
// else AdamW::kDefaultGroup.
std::string group_for(const std::string& name, const std::vector<ParamGroupOptions>& groups);
// Throws OptimizerConfigError "optim.param_groups[i] (name): glob '…' matches no parameter" for the
// first glob of `groups` that matches none of `names`.
void check_globs_match(const std::vector<ParamGroupOptions>& groups, const std::vector<std::string>& names);

// Optimizer state of one parameter. Moments have the parameter's dtype (f32 in training; f64
// models, used by tests, keep f64 moments). t counts this parameter's own updates, so a group that
// was frozen starts its bias correction at 1 when it unfreezes.
struct ParamState {
  Tensor exp_avg;
  Tensor exp_avg_sq;
  std::int64_t t = 0;
};

class AdamW {
 public:
  using NamedParameters = std::vector<std::pair<std::string, Tensor>>;
  static constexpr const char* kDefaultGroup = "default";

  // `params` is usually model.named_parameters(); the tensors are shared, so updates reach the
  // model. Each parameter joins the first group with a matching glob, the rest form the default
  // group (named "default", top-level values). Throws OptimizerConfigError for a glob that matches
  // no parameter, a duplicate name or a bad value, and DTypeError for a parameter that is not an
  // f32/f64 CPU tensor or an f32 CUDA tensor. CUDA parameters keep their moments on the device and
  // are updated by one multi-tensor kernel per step (ops/adamw.h).
  AdamW(NamedParameters params, AdamWOptions options);

  // Global L2 norm (accumulated in double, in a fixed order: the same bits for any thread count)
  // over every parameter that has a grad. When grad_clip > 0 and norm > grad_clip, scales all
  // grads by grad_clip / norm. Returns the norm before clipping; a NaN/Inf norm is returned as is
  // and leaves the grads unscaled, for the caller's bad-step guard to act on.
  double clip_grad_norm();
  // The two halves of clip_grad_norm, for a caller whose gradients are sharded across ranks: the
  // sum of squares of this optimizer's grads (same order and bits as above), and a scaling of them.
  double grad_sum_of_squares();
  void scale_grads(double factor);

  // One update for optimizer step `global_step` (0-based; it drives the schedule and the freeze).
  // Per group: lr_now = group lr, else lr_scale (default 1) × scheduled_lr(global_step). A group
  // with global_step < freeze_steps is skipped whole. Otherwise, per parameter that has a grad:
  //   t += 1;  p −= lr_now·wd·p;  m = β1 m + (1−β1) g;  v = β2 v + (1−β2) g²;
  //   p −= lr_now/(1−β1ᵗ) · m / (√v / √(1−β2ᵗ) + eps)
  // (PyTorch's AdamW). Parameters without a grad are skipped, their state unchanged.
  void step(std::int64_t global_step);

  // Clears every parameter's grad.
  void zero_grad();

  // The name of the first parameter (in parameter order) whose grad holds a NaN or an Inf, or ""
  // when none does: the NaN guard names the culprit instead of just saying "gradient".
  std::string first_non_finite_grad() const;

  // ---- inspection (checkpoints, logging, tests) ----
  const NamedParameters& named_parameters() const { return params_; }
  const AdamWOptions& options() const { return options_; }
  // The name of the group that owns parameter `name` (kDefaultGroup for the default group).
  const std::string& group_of(const std::string& name) const;
  // Group names in order: the default group first, then options.groups.
  std::vector<std::string> group_names() const;
  // The learning rate group `group` (a name from group_names()) uses at `step`; 0 while frozen.
  double lr_of_group(const std::string& group, std::int64_t step) const;
  // (group name, lr at step) for every group, in group_names() order: for the metrics log.
  std::vector<std::pair<std::string, double>> current_lrs(std::int64_t step) const;
  // A parameter's moments and step count; the mutable overload lets a checkpoint restore them.
  const ParamState& state(const std::string& name) const;
  ParamState& state(const std::string& name);

 private:
  struct Group {
    std::string name;
    std::optional<double> lr, lr_scale;
    double weight_decay = 0.0;
    std::int64_t freeze_steps = 0;
    std::vector<std::size_t> members;  // indices into params_
  };
  std::size_t index_of(const std::string& name) const;
  const Group& group_named(const std::string& group) const;
  double group_lr(const Group& g, std::int64_t step) const;

  AdamWOptions options_;
  NamedParameters params_;
  std::vector<ParamState> states_;
  std::vector<std::size_t> group_index_;  // per parameter: index into groups_
  std::vector<Group> groups_;             // groups_[0] is the default group
  std::unordered_map<std::string, std::size_t> index_;
};

}  // namespace gattn::optim
