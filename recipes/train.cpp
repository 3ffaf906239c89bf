// `gattn train --config FILE [key.path=value ...]`: trains a gated GPT on the CPU from a YAML config
// (SPEC §1, §2, §5): gradient accumulation, regularisers, clipping, the NaN guard, periodic eval,
// checkpoints of the weights, metrics.jsonl with gate statistics, and a live terminal line.
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "framework/autograd/grad_mode.h"
#include "framework/config/config.h"
#include "framework/data/dataset.h"
#include "framework/io/checkpoint.h"
#include "framework/io/metrics.h"
#include "framework/io/safetensors.h"
#include "framework/optim/adamw.h"
#include "ops/elementwise.h"
#include "framework/runtime/progress.h"
#include "framework/runtime/threads.h"
#include "models/gpt.h"
#include "recipes/recipe.h"
#include "recipes/run_setup.h"

namespace gattn::recipes {

namespace {

namespace fs = std::filesystem;

struct TrainArgs {
  std::string config;
  std::vector<std::string> overrides;
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

int run_train(const TrainArgs& args) {
  RunSetup run = prepare_run(args.config, args.overrides);
  const Config& cfg = run.config;
  models::GPT& model = *run.model;
  Dataset& data = *run.data;

  const std::int64_t B = cfg.get_int("train.batch_size"), T = cfg.model_config().block_size;
  const std::int64_t max_steps = cfg.get_int("train.max_steps"), grad_accum = cfg.get_int("train.grad_accum");
  const std::int64_t log_every = cfg.get_int("train.log_every"), eval_every = cfg.get_int("eval.every");
  const std::int64_t ckpt_every = cfg.get_int("checkpoint.every"), max_bad = cfg.get_int("train.max_bad_steps");
  const double w_gate = cfg.get_double("regularization.gate_entropy"), w_attn = cfg.get_double("regularization.attn_entropy");
  const double w_router = cfg.get_double("regularization.router_balance");

  optim::AdamW optimizer(model.named_parameters(), adamw_options(cfg));
  start_run_directory(run);  // only now, after every check has passed: bad input writes nothing
  MetricsWriter metrics((fs::path(run.dir) / "metrics.jsonl").string());
  ProgressDisplay progress(max_steps, ProgressDisplay::is_tty(stdout));
  progress.message("gattn train: " + std::to_string(model.num_parameters()) + " parameters, " + data.describe());
  progress.message("run directory: " + run.dir);

  Generator data_gen(static_cast<std::uint64_t>(cfg.get_int("seed")), /*stream=*/1);
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  std::int64_t bad_in_a_row = 0;
  EvalResult last_eval;
  double window_tokens = 0, window_start = 0;

  for (std::int64_t step = 0; step < max_steps; ++step) {
    const bool log_step = (step + 1) % log_every == 0 || step == 0 || step + 1 == max_steps;
    double loss_sum = 0, gate_ent = 0, attn_ent = 0, router = 0;
    std::vector<models::LayerStats> stats;
    model.train();
    for (std::int64_t micro = 0; micro < grad_accum; ++micro) {
      Batch batch = data.sample_train(B, T, data_gen);
      models::ForwardOptions fo;
      fo.gate_entropy = w_gate != 0 || log_step;
      fo.attn_entropy = w_attn != 0;
      fo.router_balance = w_router != 0 || log_step;
      fo.collect_stats = log_step && micro + 1 == grad_accum;
      models::ForwardResult r = model.forward(batch.x, batch.y, fo);
      Tensor total = r.loss;
      if (w_gate != 0 && r.gate_entropy.defined()) total = total + r.gate_entropy * w_gate;
      if (w_attn != 0 && r.attn_entropy.defined()) total = total + r.attn_entropy * w_attn;
      if (w_router != 0 && r.router_balance.defined()) total = total + r.router_balance * w_router;
      (total * (1.0 / static_cast<double>(grad_accum))).backward();
      loss_sum += r.loss.item();
      if (r.gate_entropy.defined()) gate_ent += r.gate_entropy.item();
      if (r.attn_entropy.defined()) attn_ent += r.attn_entropy.item();
      if (r.router_balance.defined()) router += r.router_balance.item();
      if (fo.collect_stats) stats = std::move(r.stats);
    }
    const double loss = loss_sum / static_cast<double>(grad_accum);
    const double grad_norm = optimizer.clip_grad_norm();
    if (!std::isfinite(loss) || !std::isfinite(grad_norm)) {
      // The NaN guard: skip the update, count it, stop after max_bad_steps in a row.
      optimizer.zero_grad();
      ++bad_in_a_row;
      progress.message("step " + std::to_string(step) + ": non-finite " + (std::isfinite(loss) ? "gradient" : "loss") +
                       ", update skipped (" + std::to_string(bad_in_a_row) + "/" + std::to_string(max_bad) + ")");
      if (bad_in_a_row >= max_bad)
        throw NumericalError("train: " + std::to_string(bad_in_a_row) + " consecutive steps with a non-finite " +
                               (std::isfinite(loss) ? "gradient norm" : "loss") + " at step " + std::to_string(step) +
                               "; the last checkpoint is untouched");
      continue;
    }
    bad_in_a_row = 0;
    optimizer.step(step);
    optimizer.zero_grad();
    window_tokens += static_cast<double>(B * T * grad_accum);

    const std::int64_t done = step + 1;
    if (log_step) {
      const double now = elapsed();
      const double tokens_per_s = window_tokens / std::max(now - window_start, 1e-9);
      window_tokens = 0;
      window_start = now;
      const double lr = optimizer.lr_of_group(optim::AdamW::kDefaultGroup, step);
      nlohmann::json line = {{"step", done},         {"split", "train"},           {"loss", loss},
                             {"lr", lr},             {"grad_norm", grad_norm},     {"tokens_per_s", tokens_per_s},
                             {"elapsed_s", now}};
      if (model.config().gate.kind != models::GateKind::none) line["gate_entropy"] = gate_ent / static_cast<double>(grad_accum);
      if (w_attn != 0) line["attn_entropy_reg"] = attn_ent / static_cast<double>(grad_accum);
      if (model.config().gate.kind == models::GateKind::routed) line["router_balance"] = router / static_cast<double>(grad_accum);
      add_stats(line, stats);
      metrics.write(line);
      ProgressState ps{done, loss, lr, tokens_per_s, now, std::nullopt};
      if (line.contains("gate_mean")) ps.gate_mean = line["gate_mean"].get<double>();
      progress.update(ps);
    }
    const bool last = done == max_steps;
    if ((eval_every > 0 && done % eval_every == 0) || last) {
      last_eval = evaluate(model, data, cfg, B);
      nlohmann::json line = {{"step", done}, {"split", "val"}, {"loss", last_eval.loss}};
      if (last_eval.accuracy) line["accuracy"] = *last_eval.accuracy;
      metrics.write(line);
      progress.message(format_eval(done, last_eval));
    }
    if ((ckpt_every > 0 && done % ckpt_every == 0) || last) {
      std::string dir = save_checkpoint(run, done);
      progress.message("checkpoint: " + dir);
    }
  }
  progress.finish();
  std::cout << "run directory: " << run.dir << "\n";
  std::cout << "final " << format_eval(max_steps, last_eval) << "\n";
  if (!data.vocab_json().empty()) {
    std::cout << "sample:\n" << sample_text(model, data, cfg, 200) << "\n";
  }
  return 0;
}

}  // namespace

Action add_train(CLI::App& app) {
  auto args = std::make_shared<TrainArgs>();
  CLI::App* cmd = app.add_subcommand("train", "train a model from a YAML config");
  cmd->add_option("--config", args->config, "YAML config file")->required();
  cmd->add_option("overrides", args->overrides, "key.path=value overrides (value parsed as YAML)");
  return [args] { return run_train(*args); };
}

}  // namespace gattn::recipes
