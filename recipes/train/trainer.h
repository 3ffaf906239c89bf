// The training loop of `gattn train`, in named steps. A Trainer is prepared from the command line
// (config, overrides, --resume) and run():
//
//   prepare: the run (config, data, model), device, optimizer, resume, the run directory
//   for each step:
//     micro-batches (forward, regularisers, backward) → reduce across ranks → clip
//     → the NaN guard: optimizer step, or skip → log → maybe eval → maybe checkpoint → agreed stop
//
// Under mpirun / srun the program is one rank of a data-parallel run (framework/dist): every rank
// draws the same global batch from the shared data stream and trains on its own rows of it,
// gradients are averaged (or reduce-scattered under dist.zero: 1), and rank 0 alone writes metrics,
// checkpoints and the terminal. A stopped run continues bit for bit from its last checkpoint.
#pragma once
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/tensor/random.h"
#include "framework/dist/communicator.h"
#include "framework/dist/distributed_optimizer.h"
#include "framework/io/metrics.h"
#include "framework/runtime/progress.h"
#include "models/attention.h"
#include "recipes/common/evaluation.h"
#include "recipes/common/init_from.h"
#include "recipes/common/run_setup.h"
#include "recipes/common/stats_reduce.h"
#include "recipes/train/checkpoint_policy.h"
#include "recipes/train/nan_guard.h"
#include "recipes/train/resume.h"

namespace gattn::recipes {

class BatchUploader;

struct TrainArgs {
  std::string config;
  std::vector<std::string> overrides;
  std::string resume;           // "", "auto" or a checkpoint directory
  std::int64_t stop_after = 0;  // stop as if interrupted once this many steps are done (0 = never)
  bool profile_ops = false;     // time every op of the steady-state steps; table at the end, op_profile.json
};

class Trainer {
 public:
  // Everything before the first step; bad input throws here, before anything is written.
  explicit Trainer(const TrainArgs& args);
  // Trains to train.max_steps, or until a stop signal or --stop-after; returns the exit code.
  int run();

 private:
  // What one optimizer step's micro-batches produced (sums over the micro-batches).
  struct StepResult {
    double loss_sum = 0;
    std::map<std::string, double> regularizers;  // Σ of each regulariser the model computed
    ForwardStats stats;                          // the last micro-batch's, on log steps
    std::int64_t tokens = 0;                     // decoder input positions of this rank's micro-batches
  };
  // One forward and backward: what a micro-batch (or a row part of one) adds to the step.
  struct PassArgs {
    double share = 1;            // of its micro-batch: 1, or a row part's share of the rows
    bool collect_stats = false;  // the step's statistics come from this pass
    std::set<std::string> regularizers;
    Generator* noise = nullptr;  // the part's noise stream (null: the model's own)
  };

  // prepare
  void restore_from_checkpoint();
  void open_run_directory();
  void announce();
  // one step
  StepResult forward_backward(bool log_step, BatchUploader& uploader);
  // One micro-batch's pass; `into` takes its weighted loss and regularisers, tokens and statistics.
  void forward_backward_pass(const Batch& batch, const PassArgs& args, StepResult& into);
  // One micro-batch split into row_parts_ parts on their own threads (recipes/train/row_parallel.h).
  void forward_backward_rows(const Batch& batch, PassArgs args, StepResult& into);
  void reduce_across_ranks(StepResult& r);
  bool update_or_skip(std::int64_t step, double loss, double grad_norm, std::int64_t tokens);
  void log_train(std::int64_t step, const StepResult& r, double loss, double grad_norm);
  void evaluate_and_log(std::int64_t done);
  void write_checkpoint(std::int64_t done);
  int agreed_stop_signal();
  // the end
  int stop_early(std::int64_t done, int signo);
  int finish();

  double elapsed() const;
  // --profile-ops: collection starts after the first steps (allocator and BLAS warm-up), and the
  // table goes to stdout and op_profile.json at the end.
  void maybe_start_op_profile(std::int64_t step);
  void report_op_profile(std::int64_t done);
  void say(const std::string& text);

  TrainArgs args_;
  dist::Communicator& comm_;  // the host world: losses, flags, barriers, evaluation
  // The NCCL / staged communicator that carries gradients and weights; none: the host world does.
  std::unique_ptr<dist::Communicator> grad_world_owner_;
  dist::Communicator& grad_world() { return grad_world_owner_ ? *grad_world_owner_ : comm_; }
  const int rank_, world_;
  const bool lead_;  // rank 0: writes metrics, checkpoints and the terminal
  RunSetup run_;
  std::int64_t batch_size_, block_size_, max_steps_, grad_accum_, log_every_, eval_every_;
  int row_parts_ = 1;  // train.parallel resolved: row parts per micro-batch (1: ops thread themselves)
  std::map<std::string, double> reg_weights_;  // regularization.<name> → weight
  std::set<std::string> reg_every_step_, reg_log_step_;
  std::optional<dist::DistributedOptimizer> optimizer_;
  // Training batches are drawn from this stream and nothing else: its state is the data position.
  Generator data_gen_;
  NanGuard guard_;
  CheckpointPolicy checkpoints_;
  std::optional<Resumed> resumed_;
  std::optional<InitFrom> initialized_;  // train.init_from on a fresh start
  std::int64_t start_step_ = 0, rewound_ = 0;
  std::int64_t profile_from_ = -1;   // the first profiled step, -1 while not profiling
  double profile_wall_s_ = 0;        // the profiled steps' wall time, from the forward to the update
  std::int64_t profile_tokens_ = 0;  // and this process's tokens in them
  double elapsed_before_ = 0;        // training time of the attempts before this one
  std::chrono::steady_clock::time_point start_;
  double window_tokens_ = 0, window_start_ = 0;  // tokens since the last train line, and its time
  EvalResult last_eval_;
  std::string last_checkpoint_;
  std::optional<MetricsWriter> metrics_;
  std::optional<ProgressDisplay> progress_;
};

}  // namespace gattn::recipes
