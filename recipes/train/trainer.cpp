// The Trainer's steps. The loop in run() is the algorithm; each step below is one piece of it.
#include "recipes/train/trainer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>

#include "core/autograd/engine.h"
#include "core/autograd/op_profile.h"
#include "framework/config/errors.h"
#include "framework/config/schema.h"
#include "framework/data/dataset.h"
#include "framework/dist/sharding.h"
#include "framework/io/checkpoint.h"
#include "framework/io/metrics_rewind.h"
#include "framework/io/train_state.h"
#include "framework/optim/adamw.h"
#include "framework/runtime/threads.h"
#include "models/gpt.h"
#include "ops/autocast.h"
#include "ops/elementwise.h"
#include "recipes/common/evaluation.h"
#include "recipes/common/run_checkpoints.h"
#include "recipes/common/run_samples.h"
#include "recipes/common/stats_reduce.h"
#include "recipes/common/stop_signal.h"
#include "recipes/train/batch_upload.h"
#include "recipes/train/fault_injection.h"
#include "recipes/train/gradient_world.h"
#include "recipes/train/metrics_line.h"
#include "recipes/train/op_profile_report.h"
#include "recipes/train/row_parallel.h"

namespace gattn::recipes {

namespace {

namespace fs = std::filesystem;

// Philox stream of the training batches. The model's init and noise generators use streams 0 and
// 1 of the same seed; sharing one would correlate the batch positions with the gumbel noise.
constexpr std::uint64_t kDataStream = 2;

// regularization.<name> → weight, for every regulariser the config knows.
std::map<std::string, double> regularizer_weights(const Config& cfg) {
  const std::string prefix = "regularization.";
  std::map<std::string, double> out;
  for (const config::KeySpec& k : cfg.schema().keys())
    if (k.key.rfind(prefix, 0) == 0) out[k.key.substr(prefix.size())] = cfg.get_double(k.key);
  return out;
}

// Gumbel noise per rank: rank r draws from its own Philox stream (the base stream + r·2³²) at the
// offset every rank shares, so ranks do not repeat each other's noise on different rows, rank 0's
// stream is the single-process one, and a checkpoint (which stores rank 0's state) resumes on any
// world size. A world of two with noise is therefore not bitwise a world of one with twice the
// batch (the rows get other noise draws), only equal in distribution.
constexpr int kRankStreamShift = 32;
GeneratorState rank_noise_state(GeneratorState base, int rank) {
  base.stream += static_cast<std::uint64_t>(rank) << kRankStreamShift;
  return base;
}
GeneratorState base_noise_state(GeneratorState mine, int rank) {
  mine.stream -= static_cast<std::uint64_t>(rank) << kRankStreamShift;
  return mine;
}

// Installs a leaf-ready hook for one backward and removes it again, also when backward throws.
class BackwardHookGuard {
 public:
  explicit BackwardHookGuard(autograd::LeafGradReadyHook hook) : active_(static_cast<bool>(hook)) {
    if (active_) autograd::set_leaf_grad_ready_hook(std::move(hook));
  }
  ~BackwardHookGuard() {
    if (active_) autograd::set_leaf_grad_ready_hook({});
  }
  BackwardHookGuard(const BackwardHookGuard&) = delete;
  BackwardHookGuard& operator=(const BackwardHookGuard&) = delete;

 private:
  bool active_;
};

// "3.4 MB, 41 ms" for the checkpoint message.
std::string describe_write(const CheckpointWritten& w) {
  char buf[64];
  const double mb = static_cast<double>(w.bytes) / 1e6;
  std::snprintf(buf, sizeof buf, mb < 1 ? "%.2f MB, %.0f ms" : "%.1f MB, %.0f ms", mb, w.seconds * 1e3);
  return buf;
}

}  // namespace

// ---------------------------------------------------------------- the loop

int Trainer::run() {
  if (start_step_ >= max_steps_) {
    say("the run is already at step " + std::to_string(start_step_) + " of train.max_steps " +
        std::to_string(max_steps_) + "; nothing to train (raise train.max_steps to continue)");
    if (lead_) std::cout << "run directory: " << run_.dir << "\n";
    return 0;
  }
  start_ = std::chrono::steady_clock::now();
  window_start_ = elapsed_before_;
  BatchUploader uploader(run_.device);  // host batches reach the GPU through pinned memory
  StopSignals signals;                  // from here on, SIGINT/SIGTERM stop after the current step
  for (std::int64_t step = start_step_; step < max_steps_; ++step) {
    const std::int64_t done = step + 1;
    const bool last = done == max_steps_;
    const bool log_step = done % log_every_ == 0 || step == 0 || last;
    maybe_inject_fault(rank_, done);
    maybe_start_op_profile(step);
    const auto step_start = std::chrono::steady_clock::now();
    run_.model->set_step(step);  // the scheduled gate options (temperature, ramp) stand at `step` steps done
    StepResult r = forward_backward(log_step, uploader);
    const std::int64_t rank_tokens = r.tokens;
    reduce_across_ranks(r);
    const double loss = r.loss_sum / static_cast<double>(grad_accum_);
    double grad_norm = 0;
    {
      const autograd::profile::Section section("(clip grad norm)");
      grad_norm = optimizer_->clip_grad_norm();
    }
    const bool updated = update_or_skip(step, loss, grad_norm, r.tokens);
    if (profile_from_ >= 0) {
      profile_wall_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - step_start).count();
      profile_tokens_ += rank_tokens;
    }
    if (log_step && updated && lead_) log_train(step, r, loss, grad_norm);
    if ((eval_every_ > 0 && done % eval_every_ == 0) || last) evaluate_and_log(done);
    const bool checkpointed = checkpoints_.due(done, last, guard_.bad_in_a_row());
    if (checkpointed) write_checkpoint(done);
    const int signo = agreed_stop_signal();
    if (!last && (signo != 0 || done == args_.stop_after)) {
      if (!checkpointed) write_checkpoint(done);
      return stop_early(done, signo);
    }
  }
  return finish();
}

// ---------------------------------------------------------------- prepare

Trainer::Trainer(const TrainArgs& args)
    : args_(args),
      comm_(dist::cpu_world()),  // a launched rank joins its job here (MPI_Init); a plain run is a world of one
      rank_(comm_.rank()),
      world_(comm_.size()),
      lead_(rank_ == 0),
      run_(prepare_run(args.config, args.overrides, !args.resume.empty())),
      batch_size_(run_.config.get_int("train.batch_size")),
      block_size_(run_.config.model_config().block_size),
      max_steps_(run_.config.get_int("train.max_steps")),
      grad_accum_(run_.config.get_int("train.grad_accum")),
      log_every_(run_.config.get_int("train.log_every")),
      eval_every_(run_.config.get_int("eval.every")),
      reg_weights_(regularizer_weights(run_.config)),
      // Every rank draws the whole global batch (world × batch_size windows) and keeps its rows, so
      // the position is in global tokens and the same on every rank and for every world size.
      data_gen_(static_cast<std::uint64_t>(run_.config.get_int("seed")), kDataStream),
      guard_(run_.config.get_int("train.max_bad_steps")),
      checkpoints_{run_.config.get_int("checkpoint.every")} {
  const Config& cfg = run_.config;
  comm_.set_timeout(cfg.get_double("dist.timeout_s"));
  // train.threads 0 means all cores: shared among the ranks on this node, not each taking them all.
  const dist::LaunchInfo& launch = dist::world_launch();
  if (cfg.get_int("train.threads") == 0 && launch.local_size > 1)
    set_num_threads(std::max(1, num_procs() / launch.local_size));
  row_parts_ = row_parts_for(cfg, run_.device, num_threads(), run_.model->num_parameters());
  // Regularisers with a weight are computed every step; on log steps all of them, to log.
  for (const auto& [name, w] : reg_weights_) {
    reg_log_step_.insert(name);
    if (w != 0) reg_every_step_.insert(name);
  }
  // Gradients and weights travel on the host world (CPU), NCCL (a GPU per rank) or the host world
  // staged through pinned memory (ranks sharing a GPU); host values always use the host world.
  grad_world_owner_ = make_gradient_world(cfg, run_.device, comm_);
  // Before the optimizer: its moments are made beside the parameters. A resume then copies the
  // checkpoint's weights and moments onto the device.
  if (run_.device != Device::cpu) run_.model->to_(run_.device);
  optimizer_.emplace(run_.model->named_parameters(), adamw_options(cfg), grad_world(),
                     static_cast<int>(cfg.get_int("dist.zero")), gradient_sync(cfg));
  restore_from_checkpoint();
  run_.model->noise_generator().set_state(rank_noise_state(run_.model->noise_generator().state(), rank_));
  optimizer_->broadcast_parameters();  // identical starting weights, whatever each rank read or drew
  open_run_directory();
  announce();
}

void Trainer::restore_from_checkpoint() {
  const bool init_from = !run_.config.get_string("train.init_from").empty();
  // --resume auto continues a fine-tuning run from its own checkpoints (starting from init_from when
  // it has none yet); a checkpoint named beside init_from would be two places to start from.
  if (init_from && !args_.resume.empty() && args_.resume != "auto")
    throw ConfigError(run_.config.where("train.init_from") + ": train.init_from and --resume " + args_.resume +
                      " name two starting points; continue a run with --resume auto, or start one from init_from");
  if (!args_.resume.empty())
    resumed_ = resume_run(args_.resume, run_, [&](const OptimizerSnapshot& state) { optimizer_->load_state(state); });
  if (!resumed_) {
    if (init_from) initialized_ = init_from_checkpoint(run_.config, *run_.data, *run_.model);
    return;
  }
  start_step_ = resumed_->state.step;
  guard_ = NanGuard(run_.config.get_int("train.max_bad_steps"), resumed_->state.bad_steps_in_a_row);
  elapsed_before_ = resumed_->state.elapsed_s;
  data_gen_.set_state(resumed_->state.rng.at(kDataRng));
  last_checkpoint_ = resumed_->dir;
}

void Trainer::open_run_directory() {
  // Every rank has checked the run (config, data, "run.dir already holds a run") before rank 0
  // creates anything in it.
  comm_.barrier("the barrier before the run directory is created");
  const std::string metrics_path = (fs::path(run_.dir) / "metrics.jsonl").string();
  if (lead_) {
    start_run_directory(run_);  // only now, after every check has passed: bad input writes nothing
    // The lines after the checkpoint belong to training this run redoes (all of them when an
    // attempt stopped before its first checkpoint).
    rewound_ = args_.resume.empty() ? 0 : rewind_metrics(metrics_path, start_step_);
    metrics_.emplace(metrics_path);
  }
  // mpirun hands its ranks a pseudo-terminal even when its own output goes to a file: under a
  // launcher the progress is plain lines (one per train.log_every), never redrawn in place.
  progress_.emplace(max_steps_, lead_ && !dist::world_launch().launched && ProgressDisplay::is_tty(stdout));
}

void Trainer::announce() {
  const int zero = static_cast<int>(run_.config.get_int("dist.zero"));
  std::string intro =
      "gattn train: " + std::to_string(run_.model->num_parameters()) + " parameters, " + run_.data->describe();
  if (world_ > 1) {
    intro += ", ";
    intro.append(std::to_string(world_)).append(" ranks (").append(grad_world().backend()).append(", dist.zero ");
    intro.append(std::to_string(zero)).append(")");
  }
  say(intro);
  if (const std::string rows = describe_row_parts(row_parts_, batch_size_); !rows.empty()) say(rows);
  say("run directory: " + run_.dir);
  if (resumed_) {
    if (!resumed_->note.empty()) say(resumed_->note);
    std::string msg = "resumed from " + resumed_->dir + " at step " + std::to_string(start_step_);
    if (rewound_ > 0) msg += " (" + std::to_string(rewound_) + " later metrics lines dropped)";
    say(msg);
    if (resumed_->state.world_size != world_) {
      std::string w = "  the checkpoint was written by ";
      w.append(std::to_string(resumed_->state.world_size))
          .append(" rank(s); continuing on ")
          .append(std::to_string(world_));
      say(w + (zero == 1 ? " (optimizer state re-sharded)" : ""));
    }
    for (const std::string& change : resumed_->config_changes) say("  config changed: " + change);
  } else if (!args_.resume.empty()) {
    say("--resume auto: no checkpoint in " + (fs::path(run_.dir) / "checkpoints").string() +
        " yet; starting from step 0");
  }
  if (initialized_) {
    say("started from " + initialized_->dir + " (train.init_from: its weights, " +
        std::to_string(initialized_->tensors) + " tensors; not its optimizer state or step)");
    for (const std::string& change : initialized_->config_changes) say("  config changed: " + change);
    for (const std::string& move : initialized_->renamed) say("  renamed: " + move);
    if (initialized_->new_parameters.empty()) say("  no new parameters");
    for (const std::string& p : initialized_->new_parameters) say("  new parameter: " + p);
  }
}

// ---------------------------------------------------------------- one step

Trainer::StepResult Trainer::forward_backward(bool log_step, BatchUploader& uploader) {
  StepResult out;
  run_.model->train();
  // Forward and backward of every micro-batch in train.precision (bf16: mixed precision).
  const ops::AutocastScope autocast(run_.precision);
  for (std::int64_t micro = 0; micro < grad_accum_; ++micro) {
    const bool last_micro = micro + 1 == grad_accum_;
    Batch batch;
    {
      const autograd::profile::Section section("(data)");
      batch = run_.data->sample_train(batch_size_ * world_, block_size_, data_gen_);
      if (world_ > 1) {
        const dist::Range rows = dist::batch_rows(batch_size_, rank_);
        const auto mine = [&](const Tensor& t) { return t.defined() ? t.alias_rows(rows.begin, rows.end) : t; };
        batch = Batch{mine(batch.x), mine(batch.y), mine(batch.source)};
      }
      batch = uploader.upload(batch);
    }
    PassArgs pass;
    pass.regularizers = log_step ? reg_log_step_ : reg_every_step_;
    pass.collect_stats = log_step && last_micro;
    if (row_parts_ > 1) {
      forward_backward_rows(batch, std::move(pass), out);  // no bucket hook: buckets start at the end
    } else {
      // The step's last backward starts the gradient buckets as their parameters finish.
      BackwardHookGuard hook(last_micro ? optimizer_->backward_hook() : autograd::LeafGradReadyHook());
      forward_backward_pass(batch, pass, out);
    }
  }
  return out;
}

void Trainer::forward_backward_pass(const Batch& batch, const PassArgs& args, StepResult& into) {
  models::ForwardOptions fo;
  fo.regularizers = args.regularizers;
  fo.collect_stats = args.collect_stats;
  fo.source = batch.source;  // the encoder's input (encoder_decoder); undefined for a decoder's data
  fo.noise = args.noise;
  into.tokens += batch.x.numel();  // seq2seq batches are as wide as their longest target, not the block
  models::ForwardResult r = run_.model->forward(batch.x, batch.y, fo);
  Tensor total = r.loss;
  for (const auto& [name, value] : r.regularizers)
    if (const double w = reg_weights_.at(name); w != 0) total = total + value * w;
  // The step's loss is the mean over micro-batches, and a row part's loss counts with its share.
  (total * (args.share * (1.0 / static_cast<double>(grad_accum_)))).backward();
  // The logged values are sums over micro-batches (divided by grad_accum when logged), a part's
  // values times its share (a whole micro-batch's times 1, which keeps every bit).
  into.loss_sum += args.share * r.loss.item();
  for (const auto& [name, value] : r.regularizers) into.regularizers[name] += args.share * value.item();
  if (args.collect_stats) into.stats.merge({std::move(r.stats), std::move(r.cross_stats), std::move(r.encoder_stats)});
}

void Trainer::forward_backward_rows(const Batch& batch, PassArgs args, StepResult& into) {
  const int parts = row_parts_;
  const std::int64_t rows = batch.x.size(0), per_part = rows / parts;  // row_parts_for: parts divide the rows
  args.share = 1.0 / static_cast<double>(parts);
  // Noise: part 0 draws from the model's generator, part p from a copy on its own stream (as ranks
  // do: rank_noise_state); afterwards the model's generator moves past every part's draws, so the
  // next step and a resume continue deterministically.
  Generator& model_noise = run_.model->noise_generator();
  constexpr int kPartStreamShift = 48;  // above the ranks' streams (kRankStreamShift)
  std::vector<Generator> noise;
  for (int p = 1; p < parts; ++p) {
    GeneratorState st = model_noise.state();
    st.stream += static_cast<std::uint64_t>(p) << kPartStreamShift;
    noise.emplace_back().set_state(st);
  }
  std::vector<StepResult> results(static_cast<std::size_t>(parts));
  const ops::ComputePrecision precision = run_.precision;
  run_row_parts(parts, [&](int p) {
    const ops::AutocastScope autocast(precision);  // per thread, as the grad mode is
    const auto at = static_cast<std::size_t>(p);
    const auto part = [&](const Tensor& t) { return t.defined() ? t.alias_rows(p * per_part, (p + 1) * per_part) : t; };
    PassArgs mine = args;
    mine.noise = p == 0 ? nullptr : &noise[at - 1];
    forward_backward_pass(Batch{part(batch.x), part(batch.y), part(batch.source)}, mine, results[at]);
  });
  GeneratorState moved = model_noise.state();
  for (const Generator& g : noise) moved.offset = std::max(moved.offset, g.state().offset);
  model_noise.set_state(moved);
  // In part order, so the sums do not depend on which thread finished first.
  for (StepResult& r : results) {
    into.loss_sum += r.loss_sum;
    for (const auto& [name, value] : r.regularizers) into.regularizers[name] += value;
    into.stats.merge(r.stats);
    into.tokens += r.tokens;
  }
}

void Trainer::reduce_across_ranks(StepResult& r) {
  {
    const autograd::profile::Section section("(average gradients)");
    optimizer_->average_gradients();
  }
  if (world_ == 1) return;
  // The logged values are means over ranks (each rank's is the mean of its rows), the gate
  // statistics sums over the global batch; a non-finite loss on any rank makes every rank skip.
  // Every rank computed the same regularisers (same model, same step kind): one value per name, in
  // the map's order.
  std::vector<double> values{r.loss_sum};
  for (const auto& [name, sum] : r.regularizers) values.push_back(sum);
  const std::vector<double> sums =
      comm_.all_reduce_host(values, dist::ReduceOp::sum, "all-reduce of the step's losses");
  r.loss_sum = sums[0] / world_;
  std::size_t at = 1;
  for (auto& [name, sum] : r.regularizers) sum = sums[at++] / world_;
  // Every rank collects stats on the same (log) steps, so all of them take part or none.
  if (!r.stats.empty()) all_reduce_stats(comm_, r.stats, run_.model->config(), "all-reduce of the gate statistics");
}

bool Trainer::update_or_skip(std::int64_t step, double loss, double grad_norm, std::int64_t tokens) {
  if (guard_.step_ok(loss, grad_norm)) {
    {
      const autograd::profile::Section section("(optimizer step)");
      optimizer_->step(step);
    }
    {
      const autograd::profile::Section section("(zero grad)");
      optimizer_->zero_grad();
    }
    window_tokens_ += static_cast<double>(tokens * world_);  // the global rate
    return true;
  }
  // Skipped: weights and moments stay as they were; the first non-finite tensor is named.
  const std::string culprit =
      NanGuard::culprit(loss, std::isfinite(loss) ? optimizer_->first_non_finite_grad() : std::string());
  optimizer_->zero_grad();
  const std::int64_t done = step + 1;
  say(guard_.skipped_message(done, culprit));
  if (guard_.exhausted()) {
    progress_->finish();
    throw NumericalError(guard_.failure_message(done, culprit, last_checkpoint_));
  }
  return false;
}

void Trainer::log_train(std::int64_t step, const StepResult& r, double loss, double grad_norm) {
  TrainLine t;
  t.step = step + 1;
  t.loss = loss;
  t.grad_norm = grad_norm;
  t.elapsed_s = elapsed();
  t.tokens_per_s = window_tokens_ / std::max(t.elapsed_s - window_start_, 1e-9);
  window_tokens_ = 0;
  window_start_ = t.elapsed_s;
  t.lr = optimizer_->lr_of_group(optim::AdamW::kDefaultGroup, step);
  t.stats = r.stats.stats;
  t.cross_stats = r.stats.cross;
  t.encoder_stats = r.stats.encoder;
  t.gate_parameters = gate_parameters_by_layer(*run_.model);  // after the optimizer step this line reports
  for (const auto& [name, sum] : r.regularizers) t.regularizers[name] = sum / static_cast<double>(grad_accum_);
  const nlohmann::json line = train_metrics_line(t);
  metrics_->write(line);
  ProgressState ps{t.step, loss, t.lr, t.tokens_per_s, t.elapsed_s, std::nullopt};
  if (line.contains("gate_mean")) ps.gate_mean = line["gate_mean"].get<double>();
  progress_->update(ps);
}

void Trainer::evaluate_and_log(std::int64_t done) {
  run_.model->set_step(done);
  last_eval_ = evaluate(*run_.model, *run_.data, run_.config, batch_size_, &comm_);
  if (lead_) {
    nlohmann::json line = {{"step", done}, {"split", "val"}};
    add_eval_fields(line, last_eval_);
    metrics_->write(line);
  }
  say(format_eval(done, last_eval_));
}

void Trainer::write_checkpoint(std::int64_t done) {
  // Collective: rank 0 writes the step directory, every rank then agrees it is complete (an
  // all-reduce of the failures, which is also a barrier), and only then does `latest` move.
  TrainState st;
  st.step = done;
  st.world_size = world_;
  st.rng[kDataRng] = data_gen_.state();
  st.rng[kModelNoiseRng] = base_noise_state(run_.model->noise_generator().state(), rank_);
  st.bad_steps_in_a_row = guard_.bad_in_a_row();
  st.elapsed_s = elapsed();
  const std::string name = checkpoint_name(done);
  const OptimizerSnapshot state = optimizer_->state_for_checkpoint();
  std::optional<CheckpointWritten> written;
  std::exception_ptr error;  // rank 0's failure (CheckpointError, or NumericalError for NaN weights)
  if (lead_) {
    try {
      written = save_checkpoint_directory(run_, state, optimizer_->current_lrs(done - 1), st);
    } catch (const Error&) {
      if (world_ == 1) throw;
      error = std::current_exception();
    }
  }
  const double failures = comm_.all_reduce_host({error ? 1.0 : 0.0}, dist::ReduceOp::sum,
                                                "the agreement that checkpoint " + name + " is complete")[0];
  if (failures > 0) {
    if (lead_) std::rethrow_exception(error);
    throw DistError("dist: rank 0 could not write checkpoint " + name + " (its message says why)");
  }
  if (lead_) {
    publish_checkpoint(run_, done);
    last_checkpoint_ = written->dir;
    progress_->message("checkpoint: " + written->dir + " (" + describe_write(*written) + ")");
  }
}

int Trainer::agreed_stop_signal() {
  // A signal reaches the ranks at different moments: they stop together at the first step after
  // which any of them has seen one.
  const int signo = StopSignals::received();
  if (world_ == 1) return signo;
  return static_cast<int>(
      comm_.all_reduce_host({static_cast<double>(signo)}, dist::ReduceOp::max, "all-reduce of the stop signal")[0]);
}

// ---------------------------------------------------------------- the end

int Trainer::stop_early(std::int64_t done, int signo) {
  progress_->finish();
  report_op_profile(done);
  std::string how;  // a multi-rank run resumes under a launcher, on this or any other world size
  if (world_ > 1)
    how.append(" (on any number of ranks, e.g. scripts/launch.sh -n ").append(std::to_string(world_)).append(")");
  if (lead_)
    std::cout << "stopped at step " << done << " of " << max_steps_ << " ("
              << (signo != 0 ? signal_name(signo) : std::string("--stop-after")) << "); resume with" << how << ":\n  "
              << resume_command(args_.config, args_.overrides) << "\n";
  return 0;
}

int Trainer::finish() {
  progress_->finish();
  report_op_profile(max_steps_);
  if (!lead_) return 0;
  std::cout << "run directory: " << run_.dir << "\n";
  std::cout << "final " << format_eval(max_steps_, last_eval_) << "\n";
  // An interrupt during the last step still ends the run normally, without the slow sample.
  if (StopSignals::received() != 0) return 0;
  if (run_.model->config().encoder_decoder()) {
    run_.model->to_(Device::cpu);  // generation's KV-cache attention is a CPU kernel
    std::cout << "sample: " << sample_target(*run_.model, *run_.data) << "\n";
  } else if (run_.data->text_codec()) {
    run_.model->to_(Device::cpu);
    std::cout << "sample:\n" << sample_text(*run_.model, *run_.data, run_.config, 200) << "\n";
  }
  return 0;
}

void Trainer::maybe_start_op_profile(std::int64_t step) {
  // The first steps allocate the tensor pool and warm BLAS up; a short run profiles what it has.
  constexpr std::int64_t kWarmupSteps = 5;
  if (!args_.profile_ops || profile_from_ >= 0) return;
  if (step - start_step_ >= std::min(kWarmupSteps, (max_steps_ - start_step_) / 2)) {
    autograd::profile::enable(true);
    profile_from_ = step;
  }
}

void Trainer::report_op_profile(std::int64_t done) {
  if (profile_from_ < 0) return;
  autograd::profile::enable(false);
  const OpProfile profile = autograd::profile::snapshot();
  const std::int64_t steps = done - profile_from_;
  if (!lead_) return;
  StepRate rate;
  rate.wall_s = profile_wall_s_;
  rate.tokens = profile_tokens_;
  rate.flops_per_token = run_.model->flops_per_token(block_size_);
  rate.threads = num_threads();
  // The peak at the run's thread count, measured after the steps (about a second): the denominator
  // of "% of peak" on this machine, not a datasheet number. A GPU run's steps are not CPU work.
  if (run_.device == Device::cpu) rate.peak = measure_fma_peak(rate.threads);
  std::cout << op_profile_table(profile, steps, rate) << "\n";
  write_file_atomically((std::filesystem::path(run_.dir) / "op_profile.json").string(),
                        op_profile_json(profile, steps, rate).dump(2) + "\n");
}

double Trainer::elapsed() const {
  return elapsed_before_ + std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Trainer::say(const std::string& text) {
  if (lead_ && progress_) progress_->message(text);
}

}  // namespace gattn::recipes
