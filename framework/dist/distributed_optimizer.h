// The optimizer of a data-parallel run, whatever dist.zero says: the trainer calls the same five
// steps (average gradients, clip, step, zero_grad, checkpoint state) and this class routes them to
// AdamW with bucketed gradient all-reduce (zero 0) or to the sharded ZeroAdamW (zero 1). In a world
// of one with zero 0 it is exactly optim::AdamW: no copies, no communication.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/autograd/engine.h"
#include "framework/dist/communicator.h"
#include "framework/dist/gradient_buckets.h"
#include "framework/dist/zero_adamw.h"
#include "framework/io/optimizer_io.h"
#include "framework/optim/adamw.h"

namespace gattn::dist {

// How zero 0's gradients travel (dist.bucket_mb, dist.grad_dtype).
struct GradientSync {
  std::int64_t bucket_elements = GradientBuckets::kDefaultBucketElements;
  DType wire_dtype = DType::f32;  // f32 or bf16; ZeRO-1 reduce-scatters f32 only
};

// "" when `sync` suits dist.zero `zero`, else why not in one line naming the key (bf16 buckets are
// zero 0's: ZeRO-1 reduce-scatters f32). The config check and the optimizer share this rule.
std::string gradient_sync_problem(int zero, const GradientSync& sync);

class DistributedOptimizer {
 public:
  DistributedOptimizer(optim::AdamW::NamedParameters params, optim::AdamWOptions options, Communicator& comm, int zero,
                       GradientSync sync = {});

  // Collective: every rank's weights become rank 0's (identical starting weights).
  void broadcast_parameters();
  // For the autograd engine (autograd::set_leaf_grad_ready_hook) during the last backward of a
  // step: starts gradient buckets as their parameters become ready. Empty when there is nothing
  // to overlap (one rank, or ZeRO-1's single reduce-scatter).
  autograd::LeafGradReadyHook backward_hook();
  // Collective: each rank's gradients (its local mean) become the mean over ranks.
  void average_gradients();
  // Global-norm clipping over the averaged gradients; returns the norm (collective under zero 1).
  double clip_grad_norm();
  std::string first_non_finite_grad() const;
  // One AdamW step for optimizer step `global_step` (zero 1: then the weights' all-gather).
  void step(std::int64_t global_step);
  void zero_grad();
  double lr_of_group(const std::string& group, std::int64_t step) const;
  std::vector<std::pair<std::string, double>> current_lrs(std::int64_t step) const;

  // Collective under zero 1: the full optimizer state for a checkpoint (docs/checkpoint-format.md).
  OptimizerSnapshot state_for_checkpoint();
  // The full state read from a checkpoint (written by any world size and zero setting).
  void load_state(const OptimizerSnapshot& state);

  int zero() const { return zero_; }
  const optim::AdamW::NamedParameters& named_parameters() const { return params_; }

 private:
  optim::AdamW::NamedParameters params_;
  Communicator& comm_;
  int zero_;
  std::unique_ptr<optim::AdamW> full_;        // zero 0
  std::unique_ptr<GradientBuckets> buckets_;  // zero 0 with more than one rank
  std::unique_ptr<ZeroAdamW> sharded_;        // zero 1
};

}  // namespace gattn::dist
