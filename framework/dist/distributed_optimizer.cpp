// Routing between the replicated (zero 0) and sharded (zero 1) optimizers.
#include "framework/dist/distributed_optimizer.h"

namespace gattn::dist {

std::string gradient_sync_problem(int zero, const GradientSync& sync) {
  if (zero == 1 && sync.wire_dtype != DType::f32)
    return std::string("dist.grad_dtype '") + dtype_name(sync.wire_dtype) +
           "' is for dist.zero 0's gradient buckets; ZeRO-1 reduce-scatters f32";
  return "";
}

DistributedOptimizer::DistributedOptimizer(optim::AdamW::NamedParameters params, optim::AdamWOptions options,
                                           Communicator& comm, int zero, GradientSync sync)
    : params_(params), comm_(comm), zero_(zero) {
  if (zero != 0 && zero != 1) {
    std::string msg = "dist.zero must be 0 or 1, got ";
    msg += std::to_string(zero);
    throw DistError(msg);
  }
  if (const std::string problem = gradient_sync_problem(zero, sync); !problem.empty())
    throw DistError("dist: " + problem);
  if (zero == 1) {
    sharded_ = std::make_unique<ZeroAdamW>(std::move(params), std::move(options), comm);
  } else {
    full_ = std::make_unique<optim::AdamW>(std::move(params), std::move(options));
    if (comm.size() > 1)
      buckets_ = std::make_unique<GradientBuckets>(params_, comm, sync.bucket_elements, sync.wire_dtype);
  }
}

void DistributedOptimizer::broadcast_parameters() {
  if (comm_.size() == 1) return;
  for (auto& [name, p] : params_) {
    std::string what = "broadcast of parameter ";
    what += name;
    comm_.broadcast(p, 0, what);
  }
}

autograd::LeafGradReadyHook DistributedOptimizer::backward_hook() {
  if (!buckets_) return {};
  return [buckets = buckets_.get()](const TensorImpl& leaf) { buckets->ready_leaf(leaf); };
}

void DistributedOptimizer::average_gradients() {
  if (sharded_)
    sharded_->reduce_scatter_gradients();
  else if (buckets_)
    buckets_->finish();  // reports every parameter ready (last first), then waits for the buckets
}

double DistributedOptimizer::clip_grad_norm() {
  return sharded_ ? sharded_->clip_grad_norm() : full_->clip_grad_norm();
}

std::string DistributedOptimizer::first_non_finite_grad() const {
  return sharded_ ? sharded_->first_non_finite_grad() : full_->first_non_finite_grad();
}

void DistributedOptimizer::step(std::int64_t global_step) {
  if (sharded_)
    sharded_->step(global_step);
  else
    full_->step(global_step);
}

void DistributedOptimizer::zero_grad() {
  if (sharded_)
    sharded_->zero_grad();
  else
    full_->zero_grad();
}

double DistributedOptimizer::lr_of_group(const std::string& group, std::int64_t step) const {
  return sharded_ ? sharded_->lr_of_group(group, step) : full_->lr_of_group(group, step);
}

std::vector<std::pair<std::string, double>> DistributedOptimizer::current_lrs(std::int64_t step) const {
  return sharded_ ? sharded_->current_lrs(step) : full_->current_lrs(step);
}

OptimizerSnapshot DistributedOptimizer::state_for_checkpoint() {
  return sharded_ ? sharded_->gather_state() : optimizer_snapshot(*full_);
}

void DistributedOptimizer::load_state(const OptimizerSnapshot& state) {
  if (sharded_) {
    sharded_->load_state(state);
    return;
  }
  for (const ParamMoments& m : state) {
    optim::ParamState& s = full_->state(m.name);
    s.exp_avg.copy_from(m.exp_avg);
    s.exp_avg_sq.copy_from(m.exp_avg_sq);
    s.t = m.t;
  }
}

}  // namespace gattn::dist
