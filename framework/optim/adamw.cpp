// AdamW: group assignment and validation at construction, then a fused one-pass update of all CPU
// parameters in one parallel region, and one multi-tensor kernel launch for all CUDA parameters of
// a step (ops/cuda/adamw.h, the same update element for element).
#include "framework/optim/adamw.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "framework/autograd/grad_mode.h"
#include "framework/optim/glob.h"
#include "framework/optim/param_group_rules.h"
#include "ops/cpu/parallel.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/unary.h"
#ifdef GATTN_WITH_CUDA
#include "ops/cuda/adamw.h"
#include "ops/cuda/host_util.h"
#endif

namespace gattn::optim {

namespace {

// Elements per partial sum in clip_grad_norm: fixed (not per thread) so the sum's order, and so
// its bits, do not depend on the thread count.
constexpr std::int64_t kNormBlock = 1 << 14;

std::int64_t num_blocks(std::int64_t n) { return (n + kNormBlock - 1) / kNormBlock; }

std::string group_key(std::size_t i, const std::string& name) {
  std::string key = "optim.param_groups[";
  key.append(std::to_string(i)).append("] (").append(name).append(")");
  return key;
}

void require(bool ok, const std::string& key, const std::string& what, double value) {
  if (!ok) throw OptimizerConfigError(key + ": " + what + ", got " + std::to_string(value));
}

struct UpdateCoeffs {
  double decay;  // 1 − lr·wd
  double beta1, beta2;
  double step_size;     // lr / (1 − β1ᵗ)
  double inv_sqrt_bc2;  // 1 / √(1 − β2ᵗ)
  double eps;
};

// One pass over [begin, end) of p, g, m, v; elements are independent, so how the range is cut
// does not change the result. Built with -ffp-contract=off (CMakeLists.txt): every operation
// rounds once, as in the CUDA kernel.
template <class T>
void adamw_update(T* __restrict p, const T* __restrict g, T* __restrict m, T* __restrict v, std::int64_t begin,
                  std::int64_t end, const UpdateCoeffs& c) {
  const T decay = static_cast<T>(c.decay), b1 = static_cast<T>(c.beta1), b2 = static_cast<T>(c.beta2);
  const T one_b1 = static_cast<T>(1.0 - c.beta1), one_b2 = static_cast<T>(1.0 - c.beta2);
  const T step = static_cast<T>(c.step_size), inv_bc2 = static_cast<T>(c.inv_sqrt_bc2), eps = static_cast<T>(c.eps);
  for (std::int64_t i = begin; i < end; ++i) {
    const T gi = g[i];
    const T mi = b1 * m[i] + one_b1 * gi;
    const T vi = b2 * v[i] + one_b2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    p[i] = p[i] * decay - step * mi / (std::sqrt(vi) * inv_bc2 + eps);
  }
}

// Calls fn(item, first, end) for every kNormBlock-sized block [first, end) of every item (items[i].n
// elements) in one parallel region: one fork/join per step instead of one per parameter (the model
// has dozens of parameters, most of them small, and each region costs a wake-up of the pool). The
// blocks are fixed, not per thread, so what a block computes does not depend on the thread count.
template <class Item, class Fn>
void for_each_block(const std::vector<Item>& items, std::int64_t cost_per_element, Fn fn) {
  std::vector<std::pair<std::size_t, std::int64_t>> blocks;  // (item, first element)
  std::int64_t total = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    for (std::int64_t at = 0; at < items[i].n; at += kNormBlock) blocks.emplace_back(i, at);
    total += items[i].n;
  }
  const std::int64_t count = static_cast<std::int64_t>(blocks.size());
#pragma omp parallel for schedule(dynamic, 1) if (cpu::worth_parallel(total * cost_per_element))
  for (std::int64_t k = 0; k < count; ++k) {
    const auto [i, first] = blocks[static_cast<std::size_t>(k)];
    fn(items[i], first, std::min(items[i].n, first + kNormBlock));
  }
}

// One host parameter's update of this step.
template <class T>
struct HostUpdate {
  T* p;
  const T* g;
  T* m;
  T* v;
  std::int64_t n;
  UpdateCoeffs c;
};

template <class T>
void adamw_update_all(const std::vector<HostUpdate<T>>& updates) {
  for_each_block(updates, 8, [](const HostUpdate<T>& u, std::int64_t first, std::int64_t end) {
    adamw_update(u.p, u.g, u.m, u.v, first, end, u.c);
  });
}

// One host gradient's share of clip_grad_norm: its blocks' sums of squares, partials[b] for block b.
template <class T>
struct HostNorm {
  const T* g;
  std::int64_t n;
  double* partials;
};

template <class T>
void block_sums_of_squares_all(const std::vector<HostNorm<T>>& grads) {
  for_each_block(grads, 1, [](const HostNorm<T>& h, std::int64_t first, std::int64_t end) {
    // A simd reduction: the lanes' order is fixed when this is compiled, so the sum is still
    // deterministic; a plain loop is one chain of dependent adds, ~4× slower.
    double s = 0.0;
    const auto* g = h.g;
#pragma omp simd reduction(+ : s)
    for (std::int64_t i = first; i < end; ++i) s += static_cast<double>(g[i]) * static_cast<double>(g[i]);
    h.partials[first / kNormBlock] = s;
  });
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

  std::size_t total_blocks = 0;
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
    block_begin_.push_back(total_blocks);
    total_blocks += static_cast<std::size_t>(num_blocks(p.numel()));
  }
  norm_partials_.assign(total_blocks, 0.0);
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
  NoGradGuard no_grad;
  Tensor device_sum;  // Σ g² over the CUDA grads, kept on the device and read once (one sync)
  std::vector<HostNorm<float>> host_f32;
  std::vector<HostNorm<double>> host_f64;
  std::vector<std::size_t> host_params;  // which parameters' partials to add, in parameter order
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const Tensor g = checked_grad(params_[i].first, params_[i].second);
    if (!g.defined()) continue;
    if (g.device() == Device::cuda) {
      // The reduction kernels sum in a shape-fixed order: the same bits every run.
      Tensor s = ops::sum(ops::square(g));
      device_sum = device_sum.defined() ? ops::add(device_sum, s) : s;
      continue;
    }
    double* partials = norm_partials_.data() + block_begin_[i];
    if (g.dtype() == DType::f32)
      host_f32.push_back({g.data<float>(), g.numel(), partials});
    else
      host_f64.push_back({g.data<double>(), g.numel(), partials});
    host_params.push_back(i);
  }
  block_sums_of_squares_all(host_f32);
  block_sums_of_squares_all(host_f64);
  double sum = 0.0;
  for (std::size_t i : host_params) {
    const double* partials = norm_partials_.data() + block_begin_[i];
    for (std::int64_t b = 0; b < num_blocks(params_[i].second.numel()); ++b) sum += partials[b];
  }
  if (device_sum.defined()) sum += device_sum.item();
  return sum;
}

void AdamW::scale_grads(double factor) {
  for (auto& [name, p] : params_) {
    Tensor g = p.grad();
    if (g.defined()) ops::scale_(g, factor);
  }
}

void AdamW::step(std::int64_t global_step) {
  std::vector<HostUpdate<float>> host_f32;  // every host parameter of this step, one parallel region
  std::vector<HostUpdate<double>> host_f64;
#ifdef GATTN_WITH_CUDA
  std::vector<cuda::AdamWTensor> device_updates;  // every CUDA parameter of this step, one launch
#endif
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
      const UpdateCoeffs c{1.0 - lr * group.weight_decay,
                           options_.beta1,
                           options_.beta2,
                           lr / (1.0 - std::pow(options_.beta1, t)),
                           1.0 / std::sqrt(1.0 - std::pow(options_.beta2, t)),
                           options_.eps};
#ifdef GATTN_WITH_CUDA
      if (p.device() == Device::cuda) {
        device_updates.push_back({static_cast<float*>(p.raw_data()), static_cast<const float*>(g.raw_data()),
                                  static_cast<float*>(s.exp_avg.raw_data()),
                                  static_cast<float*>(s.exp_avg_sq.raw_data()), p.numel(), static_cast<float>(c.decay),
                                  static_cast<float>(c.step_size), static_cast<float>(c.inv_sqrt_bc2)});
        continue;
      }
#endif
      if (p.dtype() == DType::f32)
        host_f32.push_back(
            {p.data<float>(), g.data<float>(), s.exp_avg.data<float>(), s.exp_avg_sq.data<float>(), p.numel(), c});
      else
        host_f64.push_back(
            {p.data<double>(), g.data<double>(), s.exp_avg.data<double>(), s.exp_avg_sq.data<double>(), p.numel(), c});
    }
  }
  adamw_update_all(host_f32);
  adamw_update_all(host_f64);
#ifdef GATTN_WITH_CUDA
  if (!device_updates.empty()) {
    const cuda::AdamWHyper hyper{static_cast<float>(options_.beta1), static_cast<float>(options_.beta2),
                                 static_cast<float>(1.0 - options_.beta1), static_cast<float>(1.0 - options_.beta2),
                                 static_cast<float>(options_.eps)};
    cuda::adamw_multi_tensor_f32(device_updates, hyper, cuda::stream());
  }
#endif
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
