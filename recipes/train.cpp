// `gattn train --config FILE [key.path=value ...] [--resume auto|DIR]`: trains a gated GPT on the
// CPU from a YAML config (SPEC §1, §2, §5): gradient accumulation, regularisers, clipping, the NaN
// guard, periodic eval, full checkpoints (weights, optimizer, loop state) from which a stopped run
// continues bit for bit, graceful stops on SIGINT/SIGTERM, metrics.jsonl with gate statistics, and
// a live terminal line. Under mpirun / srun the same program is one rank of a data-parallel run
// (framework/dist): every rank draws the same global batch from the shared data stream and trains
// on its own rows of it, gradients are averaged (or reduce-scattered under dist.zero: 1), and rank 0
// alone writes metrics, checkpoints and the terminal.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

#include "framework/autograd/engine.h"
#include "framework/autograd/grad_mode.h"
#include "framework/config/config.h"
#include "framework/config/schema.h"
#include "framework/data/dataset.h"
#include "framework/dist/communicator.h"
#include "framework/dist/distributed_optimizer.h"
#include "framework/dist/sharding.h"
#include "framework/io/checkpoint.h"
#include "framework/io/metrics.h"
#include "framework/io/metrics_rewind.h"
#include "framework/io/train_state.h"
#include "framework/io/safetensors.h"
#include "framework/optim/adamw.h"
#include "ops/elementwise.h"
#include "framework/runtime/progress.h"
#include "framework/runtime/threads.h"
#include "models/gpt.h"
#include "recipes/fault_injection.h"
#include "recipes/recipe.h"
#include "recipes/resume.h"
#include "recipes/batch_upload.h"
#include "recipes/run_setup.h"
#include "recipes/stop_signal.h"

namespace gattn::recipes {

namespace {

namespace fs = std::filesystem;

constexpr std::uint64_t kDataStream = 2;  // Philox stream of the training batches

struct TrainArgs {
  std::string config;
  std::vector<std::string> overrides;
  std::string resume;           // "", "auto" or a checkpoint directory
  std::int64_t stop_after = 0;  // stop as if interrupted once this many steps are done (0 = never)
};

// SPEC §2's gate statistics over layers: means of the per-layer values and the per-layer arrays.
void add_stats(nlohmann::json& line, const std::vector<models::LayerStats>& stats) {
  ops::GateMoments all;
  nlohmann::json gate_mean = nlohmann::json::array(), entropy = nlohmann::json::array(), sink = nlohmann::json::array();
  nlohmann::json lt = nlohmann::json::array(), gt = nlohmann::json::array(), gstd = nlohmann::json::array();
  double entropy_sum = 0, sink_sum = 0;
  for (const auto& s : stats) {
    all.merge(s.gate);
    entropy.push_back(s.attn_entropy());
    sink.push_back(s.sink_ratio());
    entropy_sum += s.attn_entropy();
    sink_sum += s.sink_ratio();
    if (s.gate.count > 0) {
      gate_mean.push_back(s.gate.mean());
      gstd.push_back(s.gate.std());
      lt.push_back(s.gate.frac_below_0_1());
      gt.push_back(s.gate.frac_above_0_9());
    } else {
      gate_mean.push_back(nullptr);
      gstd.push_back(nullptr);
      lt.push_back(nullptr);
      gt.push_back(nullptr);
    }
  }
  const double n = stats.empty() ? 1.0 : static_cast<double>(stats.size());
  line["attn_entropy"] = entropy_sum / n;
  line["sink_ratio"] = sink_sum / n;
  line["attn_entropy_by_layer"] = entropy;
  line["sink_ratio_by_layer"] = sink;
  if (all.count > 0) {
    line["gate_mean"] = all.mean();
    line["gate_std"] = all.std();
    line["gate_frac_lt_0.1"] = all.frac_below_0_1();
    line["gate_frac_gt_0.9"] = all.frac_above_0_9();
    line["gate_mean_by_layer"] = gate_mean;
    line["gate_std_by_layer"] = gstd;
    line["gate_frac_lt_0.1_by_layer"] = lt;
    line["gate_frac_gt_0.9_by_layer"] = gt;
  }
}

// LayerStats are sums and counts, so the statistics of the global batch are the ranks' sums added.
constexpr std::size_t kStatsFields = 14;

// regularization.<name> → weight, for every regulariser the config knows.
std::map<std::string, double> regularizer_weights(const Config& cfg) {
  const std::string prefix = "regularization.";
  std::map<std::string, double> out;
  for (const config::KeySpec& k : config::schema())
    if (k.key.rfind(prefix, 0) == 0) out[k.key.substr(prefix.size())] = cfg.get_double(k.key);
  return out;
}

std::vector<double> flatten_stats(const std::vector<models::LayerStats>& stats) {
  std::vector<double> out;
  for (const auto& s : stats) {
    const ops::AttentionStats& a = s.attention;
    for (const ops::GateMoments* g : {&a.modulation, &s.gate})
      out.insert(out.end(), {g->sum, g->sum_sq, static_cast<double>(g->count), static_cast<double>(g->below_0_1),
                             static_cast<double>(g->above_0_9)});
    out.insert(out.end(), {a.entropy_sum, static_cast<double>(a.entropy_count), a.sink_sum, static_cast<double>(a.sink_count)});
  }
  return out;
}

void unflatten_stats(const std::vector<double>& v, std::vector<models::LayerStats>& stats) {
  auto as_int = [](double x) { return static_cast<std::int64_t>(std::llround(x)); };
  for (std::size_t l = 0; l < stats.size(); ++l) {
    const double* f = v.data() + l * kStatsFields;
    ops::AttentionStats& a = stats[l].attention;
    for (ops::GateMoments* g : {&a.modulation, &stats[l].gate}) {
      g->sum = f[0];
      g->sum_sq = f[1];
      g->count = as_int(f[2]);
      g->below_0_1 = as_int(f[3]);
      g->above_0_9 = as_int(f[4]);
      f += 5;
    }
    a.entropy_sum = f[0];
    a.entropy_count = as_int(f[1]);
    a.sink_sum = f[2];
    a.sink_count = as_int(f[3]);
  }
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

int train(const TrainArgs& args) {
  // A launched rank joins its job here (MPI_Init); a plain run is a world of one without MPI.
  dist::Communicator& comm = dist::cpu_world();
  const int rank = comm.rank(), world = comm.size();
  const bool lead = rank == 0;  // writes metrics, checkpoints and the terminal

  const bool resuming = !args.resume.empty();
  RunSetup run = prepare_run(args.config, args.overrides, resuming);
  const Config& cfg = run.config;
  models::GPT& model = *run.model;
  Dataset& data = *run.data;
  comm.set_timeout(cfg.get_double("dist.timeout_s"));
  // train.threads 0 means all cores: shared among the ranks on this node, not each taking them all.
  const dist::LaunchInfo& launch = dist::world_launch();
  if (cfg.get_int("train.threads") == 0 && launch.local_size > 1)
    set_num_threads(std::max(1, num_procs() / launch.local_size));

  const std::int64_t B = cfg.get_int("train.batch_size"), T = cfg.model_config().block_size;
  const std::int64_t max_steps = cfg.get_int("train.max_steps"), grad_accum = cfg.get_int("train.grad_accum");
  const std::int64_t log_every = cfg.get_int("train.log_every"), eval_every = cfg.get_int("eval.every");
  const std::int64_t ckpt_every = cfg.get_int("checkpoint.every"), max_bad = cfg.get_int("train.max_bad_steps");
  // The regularisers by name (regularization.<name>: its weight); the model computes those it has.
  const std::map<std::string, double> reg_weights = regularizer_weights(cfg);
  std::set<std::string> reg_always, reg_all;  // asked for every step (weight ≠ 0), and on log steps
  for (const auto& [name, w] : reg_weights) {
    reg_all.insert(name);
    if (w != 0) reg_always.insert(name);
  }
  const int zero = static_cast<int>(cfg.get_int("dist.zero"));
  const Device device = run.device;
  // The MPI gradient buckets and ZeRO shards work on host tensors; NCCL is built
  // (framework/dist/nccl_communicator) but not yet wired into the trainer.
  if (device != Device::cpu && world > 1)
    throw ConfigError(cfg.where("device") + ": device 'cuda' with " + std::to_string(world) +
                      " ranks: multi-GPU training (NCCL) is not wired into the trainer yet; use one rank per run");
  // Before the optimizer: its moments are made beside the parameters. A resume then copies the
  // checkpoint's weights and moments onto the device.
  if (device != Device::cpu) model.to_(device);

  dist::DistributedOptimizer optimizer(model.named_parameters(), adamw_options(cfg), comm, zero);
  // Training batches are drawn from this stream and nothing else: its state is the data position.
  // Stream 2: the model's init and noise generators use streams 0 and 1 of the same seed, and
  // sharing one would correlate the batch positions with the gumbel noise. Every rank draws the
  // whole global batch (world × batch_size windows) and keeps its rows, so the position is in
  // global tokens and the same on every rank and for every world size.
  Generator data_gen(static_cast<std::uint64_t>(cfg.get_int("seed")), kDataStream);
  std::int64_t start_step = 0, bad_in_a_row = 0;
  double elapsed_before = 0;  // training time of the attempts before this one
  std::optional<Resumed> resumed;
  if (resuming)
    resumed = resume_run(args.resume, run, [&](const OptimizerSnapshot& state) { optimizer.load_state(state); });
  if (resumed) {
    start_step = resumed->state.step;
    bad_in_a_row = resumed->state.bad_steps_in_a_row;
    elapsed_before = resumed->state.elapsed_s;
    data_gen.set_state(resumed->state.rng.at(kDataRng));
  }
  model.noise_generator().set_state(rank_noise_state(model.noise_generator().state(), rank));
  optimizer.broadcast_parameters();  // identical starting weights, whatever each rank read or drew

  // Every rank has checked the run (config, data, "run.dir already holds a run") before rank 0
  // creates anything in it.
  comm.barrier("the barrier before the run directory is created");
  std::string metrics_path = (fs::path(run.dir) / "metrics.jsonl").string();
  std::int64_t rewound = 0;
  std::optional<MetricsWriter> metrics;
  if (lead) {
    start_run_directory(run);  // only now, after every check has passed: bad input writes nothing
    // The lines after the checkpoint belong to training this run redoes (all of them when an attempt
    // stopped before its first checkpoint).
    rewound = resuming ? rewind_metrics(metrics_path, start_step) : 0;
    metrics.emplace(metrics_path);
  }
  // mpirun hands its ranks a pseudo-terminal even when its own output goes to a file: under a
  // launcher the progress is plain lines (one per train.log_every), never redrawn in place.
  ProgressDisplay progress(max_steps, lead && !launch.launched && ProgressDisplay::is_tty(stdout));
  auto say = [&](const std::string& text) {
    if (lead) progress.message(text);
  };
  std::string intro = "gattn train: " + std::to_string(model.num_parameters()) + " parameters, " + data.describe();
  if (world > 1) {
    intro += ", ";
    intro.append(std::to_string(world)).append(" ranks (").append(comm.backend()).append(", dist.zero ");
    intro.append(std::to_string(zero)).append(")");
  }
  say(intro);
  say("run directory: " + run.dir);
  if (resumed) {
    if (!resumed->note.empty()) say(resumed->note);
    std::string msg = "resumed from " + resumed->dir + " at step " + std::to_string(start_step);
    if (rewound > 0) msg += " (" + std::to_string(rewound) + " later metrics lines dropped)";
    say(msg);
    if (resumed->state.world_size != world) {
      std::string w = "  the checkpoint was written by ";
      w.append(std::to_string(resumed->state.world_size)).append(" rank(s); continuing on ").append(std::to_string(world));
      say(w + (zero == 1 ? " (optimizer state re-sharded)" : ""));
    }
    for (const std::string& change : resumed->config_changes) say("  config changed: " + change);
  } else if (resuming) {
    say("--resume auto: no checkpoint in " + (fs::path(run.dir) / "checkpoints").string() + " yet; starting from step 0");
  }
  if (start_step >= max_steps) {
    say("the run is already at step " + std::to_string(start_step) + " of train.max_steps " + std::to_string(max_steps) +
        "; nothing to train (raise train.max_steps to continue)");
    if (lead) std::cout << "run directory: " << run.dir << "\n";
    return 0;
  }

  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return elapsed_before + std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  EvalResult last_eval;
  double window_tokens = 0, window_start = elapsed_before;
  std::string last_checkpoint = resumed ? resumed->dir : "";
  // Collective: rank 0 writes the step directory, every rank then agrees it is complete (an
  // all-reduce of the failures, which is also a barrier), and only then does `latest` move.
  auto checkpoint = [&](std::int64_t done) {
    TrainState st;
    st.step = done;
    st.world_size = world;
    st.rng[kDataRng] = data_gen.state();
    st.rng[kModelNoiseRng] = base_noise_state(model.noise_generator().state(), rank);
    st.bad_steps_in_a_row = bad_in_a_row;
    st.elapsed_s = elapsed();
    const std::string name = checkpoint_name(done);
    const OptimizerSnapshot state = optimizer.state_for_checkpoint();
    std::optional<CheckpointWritten> written;
    std::exception_ptr error;  // rank 0's failure (CheckpointError, or NumericalError for NaN weights)
    if (lead) {
      try {
        written = save_checkpoint_directory(run, state, optimizer.current_lrs(done - 1), st);
      } catch (const Error&) {
        if (world == 1) throw;
        error = std::current_exception();
      }
    }
    const double failures = comm.all_reduce_host({error ? 1.0 : 0.0}, dist::ReduceOp::sum,
                                                 "the agreement that checkpoint " + name + " is complete")[0];
    if (failures > 0) {
      if (lead) std::rethrow_exception(error);
      throw DistError("dist: rank 0 could not write checkpoint " + name + " (its message says why)");
    }
    if (lead) {
      publish_checkpoint(run, done);
      last_checkpoint = written->dir;
      progress.message("checkpoint: " + written->dir + " (" + describe_write(*written) + ")");
    }
  };

  BatchUploader uploader(device);  // host batches reach the GPU through pinned memory
  StopSignals signals;  // from here on, SIGINT/SIGTERM stop after the current step
  for (std::int64_t step = start_step; step < max_steps; ++step) {
    const std::int64_t done = step + 1;
    const bool last = done == max_steps;
    const bool log_step = done % log_every == 0 || step == 0 || last;
    maybe_inject_fault(rank, done);
    double loss_sum = 0;
    std::map<std::string, double> reg_sums;  // Σ over micro-batches of each regulariser computed
    std::vector<models::LayerStats> stats;
    model.train();
    // Forward and backward of every micro-batch in train.precision (bf16: mixed precision).
    const ops::AutocastScope autocast(run.precision);
    for (std::int64_t micro = 0; micro < grad_accum; ++micro) {
      Batch batch = data.sample_train(B * world, T, data_gen);
      if (world > 1) {
        const dist::Range rows = dist::batch_rows(B, rank);
        batch = Batch{batch.x.alias_rows(rows.begin, rows.end), batch.y.alias_rows(rows.begin, rows.end)};
      }
      batch = uploader.upload(batch);
      models::ForwardOptions fo;
      fo.regularizers = log_step ? reg_all : reg_always;
      fo.collect_stats = log_step && micro + 1 == grad_accum;
      models::ForwardResult r = model.forward(batch.x, batch.y, fo);
      Tensor total = r.loss;
      for (const auto& [name, value] : r.regularizers)
        if (const double w = reg_weights.at(name); w != 0) total = total + value * w;
      {
        // The step's last backward starts the gradient buckets as their parameters finish.
        BackwardHookGuard hook(micro + 1 == grad_accum ? optimizer.backward_hook() : autograd::LeafGradReadyHook());
        (total * (1.0 / static_cast<double>(grad_accum))).backward();
      }
      loss_sum += r.loss.item();
      for (const auto& [name, value] : r.regularizers) reg_sums[name] += value.item();
      if (fo.collect_stats) stats = std::move(r.stats);
    }
    optimizer.average_gradients();
    if (world > 1) {
      // The logged values are means over ranks (each rank's is the mean of its rows), the gate
      // statistics sums over the global batch; a non-finite loss on any rank makes every rank skip.
      // Every rank computed the same regularisers (same model, same step kind): one value per name,
      // in the map's order.
      std::vector<double> values{loss_sum};
      for (const auto& [name, sum] : reg_sums) values.push_back(sum);
      std::vector<double> sums = comm.all_reduce_host(values, dist::ReduceOp::sum, "all-reduce of the step's losses");
      loss_sum = sums[0] / world;
      std::size_t at = 1;
      for (auto& [name, sum] : reg_sums) sum = sums[at++] / world;
      if (!stats.empty()) unflatten_stats(comm.all_reduce_host(flatten_stats(stats), dist::ReduceOp::sum,
                                                               "all-reduce of the gate statistics"),
                                          stats);
    }
    const double loss = loss_sum / static_cast<double>(grad_accum);
    const double grad_norm = optimizer.clip_grad_norm();
    if (!std::isfinite(loss) || !std::isfinite(grad_norm)) {
      // The NaN guard: skip the update (weights and moments stay as they were), name the first
      // non-finite tensor, stop after max_bad_steps in a row without writing anything.
      std::string culprit = "loss";
      if (std::isfinite(loss)) {
        const std::string param = optimizer.first_non_finite_grad();
        culprit = param.empty() ? "gradient norm" : "gradient of " + param;
      }
      optimizer.zero_grad();
      ++bad_in_a_row;
      say("step " + std::to_string(done) + ": non-finite " + culprit + ", update skipped (" + std::to_string(bad_in_a_row) +
          "/" + std::to_string(max_bad) + ")");
      if (bad_in_a_row >= max_bad) {
        progress.finish();
        std::string what = "train: non-finite ";
        what.append(culprit).append(" at step ").append(std::to_string(done)).append(", the ");
        what.append(std::to_string(bad_in_a_row)).append(" bad step(s) in a row that train.max_bad_steps allows; ");
        what.append(last_checkpoint.empty() ? std::string("no checkpoint was written")
                                            : "the last checkpoint, " + last_checkpoint + ", is untouched");
        throw NumericalError(what);
      }
    } else {
      bad_in_a_row = 0;
      optimizer.step(step);
      optimizer.zero_grad();
      window_tokens += static_cast<double>(B * T * grad_accum * world);  // the global rate
    }

    if (log_step && bad_in_a_row == 0 && lead) {
      const double now = elapsed();
      const double tokens_per_s = window_tokens / std::max(now - window_start, 1e-9);
      window_tokens = 0;
      window_start = now;
      const double lr = optimizer.lr_of_group(optim::AdamW::kDefaultGroup, step);
      nlohmann::json line = {{"step", done},         {"split", "train"},           {"loss", loss},
                             {"lr", lr},             {"grad_norm", grad_norm},     {"tokens_per_s", tokens_per_s},
                             {"elapsed_s", now}};
      add_stats(line, stats);
      // Each regulariser the model computed, under its name (with _reg where a statistic has it).
      for (const auto& [name, sum] : reg_sums)
        line[line.contains(name) ? name + "_reg" : name] = sum / static_cast<double>(grad_accum);
      metrics->write(line);
      ProgressState ps{done, loss, lr, tokens_per_s, now, std::nullopt};
      if (line.contains("gate_mean")) ps.gate_mean = line["gate_mean"].get<double>();
      progress.update(ps);
    }
    if ((eval_every > 0 && done % eval_every == 0) || last) {
      last_eval = evaluate(model, data, cfg, B, &comm);
      if (lead) {
        nlohmann::json line = {{"step", done}, {"split", "val"}, {"loss", last_eval.loss}};
        if (last_eval.accuracy) line["accuracy"] = *last_eval.accuracy;
        metrics->write(line);
      }
      say(format_eval(done, last_eval));
    }
    // No periodic checkpoint during a run of skipped steps: the newest one stays the last good
    // state, and keep_last cannot push it out. The final one is written regardless (a skipped
    // step leaves weights and moments as the last good step did).
    const bool due = (ckpt_every > 0 && done % ckpt_every == 0 && bad_in_a_row == 0) || last;
    if (due) checkpoint(done);

    // A signal reaches the ranks at different moments: they stop together at the first step
    // after which any of them has seen one.
    int signo = StopSignals::received();
    if (world > 1)
      signo = static_cast<int>(comm.all_reduce_host({static_cast<double>(signo)}, dist::ReduceOp::max,
                                                    "all-reduce of the stop signal")[0]);
    if (!last && (signo != 0 || done == args.stop_after)) {
      if (!due) checkpoint(done);
      progress.finish();
      std::string how;  // a multi-rank run resumes under a launcher, on this or any other world size
      if (world > 1) how.append(" (on any number of ranks, e.g. scripts/launch.sh -n ").append(std::to_string(world)).append(")");
      if (lead)
        std::cout << "stopped at step " << done << " of " << max_steps << " ("
                  << (signo != 0 ? signal_name(signo) : std::string("--stop-after")) << "); resume with" << how
                  << ":\n  " << resume_command(args.config, args.overrides) << "\n";
      return 0;
    }
  }
  progress.finish();
  if (!lead) return 0;
  std::cout << "run directory: " << run.dir << "\n";
  std::cout << "final " << format_eval(max_steps, last_eval) << "\n";
  // An interrupt during the last step still ends the run normally, without the slow sample.
  if (!data.vocab_json().empty() && StopSignals::received() == 0) {
    model.to_(Device::cpu);  // generation's KV-cache attention is a CPU kernel
    std::cout << "sample:\n" << sample_text(model, data, cfg, 200) << "\n";
  }
  return 0;
}

// A successful run ends MPI together; an error leaves without it (the exception reaches main,
// which exits non-zero, and mpirun / srun then stop the other ranks).
int run_train(const TrainArgs& args) {
  const int rc = train(args);
  dist::finalize_world();
  return rc;
}

}  // namespace

Action add_train(CLI::App& app) {
  auto args = std::make_shared<TrainArgs>();
  CLI::App* cmd = app.add_subcommand("train", "train a model from a YAML config");
  cmd->add_option("--config", args->config, "YAML config file")->required();
  cmd->add_option("overrides", args->overrides, "key.path=value overrides (value parsed as YAML)");
  cmd->add_option("--resume", args->resume,
                   "continue from a checkpoint: 'auto' (the run directory's latest; the newest complete one when "
                   "`latest` is lost; a fresh start when it has none) or a checkpoint directory");
  cmd->add_option("--stop-after", args->stop_after,
                  "stop as if interrupted once this many optimizer steps are done: checkpoint, exit 0")
      ->check([](const std::string& v) {
        std::size_t used = 0;
        try {
          if (std::stoll(v, &used) >= 1 && used == v.size()) return std::string();
        } catch (const std::exception&) {
        }
        std::string why = "must be a positive number of steps, got '";
        return why.append(v).append("'");
      });
  return [args] { return run_train(*args); };
}

}  // namespace gattn::recipes
