// ZeRO-1 (dist.zero: 1): AdamW whose moments are sharded across ranks. The parameters are seen as
// one flat vector; rank r owns the contiguous range sharding.h's shard_of gives it. A step is:
// reduce-scatter of the gradients (each rank receives the mean of its range only), the global
// gradient norm from every rank's partial sum of squares, AdamW on the owned range (each
// parameter's piece keeps its group's lr, weight decay, freeze_steps and step count), and an
// all-gather that brings every rank the updated weights. Each rank stores 1/world of the moments;
// the losses equal dist.zero: 0's up to the order of the norm's summation.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "framework/dist/communicator.h"
#include "framework/dist/sharding.h"
#include "framework/io/optimizer_io.h"
#include "framework/optim/adamw.h"

namespace gattn::dist {

class ZeroAdamW {
 public:
  // Parameters: f32 tensors on comm.device() (the CPU for MPI), shared with the model. Checks the
  // group globs against all parameters (OptimizerConfigError) before building this rank's shard.
  ZeroAdamW(optim::AdamW::NamedParameters params, optim::AdamWOptions options, Communicator& comm);

  // Collective: every rank's grads (local means) become the mean over ranks, this rank's range only.
  void reduce_scatter_gradients();
  // Collective: the global norm over the averaged gradients; clips the owned range like AdamW does.
  double clip_grad_norm();
  // AdamW on the owned range, then the all-gather of the weights (collective).
  void step(std::int64_t global_step);
  void zero_grad();
  // The first owned parameter piece with a non-finite gradient ("" if none).
  std::string first_non_finite_grad() const;
  // The schedule's rates per group, as optim::AdamW reports them.
  double lr_of_group(const std::string& group, std::int64_t step) const { return shard_opt_->lr_of_group(group, step); }
  std::vector<std::pair<std::string, double>> current_lrs(std::int64_t step) const {
    return shard_opt_->current_lrs(step);
  }

  // Collective: the full moments and step counts, as one AdamW over all parameters would hold them.
  OptimizerSnapshot gather_state();
  // Takes this rank's range of a full snapshot (any world size wrote it): re-sharding on resume.
  void load_state(const OptimizerSnapshot& state);

  const Range& shard() const { return shard_; }
  std::int64_t shard_slots() const { return slots_; }

 private:
  struct Piece {
    std::size_t param;  // index into params_
    Range local;        // elements of the parameter this rank owns
    std::int64_t slot;  // where they sit in the rank's shard buffer
  };
  // Gathers every rank's `slots_` values into flat_ and returns it.
  const Tensor& all_gather_flat(const std::string& what);
  // Copies this rank's values of `of_piece` (one tensor per piece, numel = piece size) into shard_buf_.
  void pack_shard(const std::vector<Tensor>& of_piece);

  optim::AdamW::NamedParameters params_;
  std::vector<std::string> groups_;  // per parameter
  Communicator& comm_;
  std::vector<Range> flat_ranges_;  // per parameter, in the flat vector
  std::int64_t total_ = 0, slots_ = 0;
  Range shard_;
  std::vector<Piece> pieces_;
  std::unique_ptr<optim::AdamW> shard_opt_;  // over views of the owned pieces
  Tensor flat_;                              // world·slots f32: reduce-scatter input, all-gather output
  Tensor shard_buf_;                         // slots f32: this rank's block
};

}  // namespace gattn::dist
