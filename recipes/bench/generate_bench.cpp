// `gattn bench generate --checkpoint DIR [--kv-policy LIST --kv-budget LIST ...]`: one cell per
// policy and budget (full once). Each cell runs the validation windows through the KV cache one
// position at a time once the budget is full (teacher forcing: the model sees the true tokens, so
// the loss measures what eviction costs), then times free greedy generation from the first
// validation token. The exact cache (full, nothing skipped) always runs first as the reference.
#include "recipes/bench/generate_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/autograd/grad_mode.h"
#include "core/tensor/error.h"
#include "models/kv_policy.h"
#include "models/sampling.h"
#include "ops/nn_functional.h"
#include "recipes/common/checkpoint_model.h"
#include "recipes/common/gate_int8.h"
#include "recipes/common/inference_args.h"
#include "recipes/common/median.h"
#include "recipes/common/option_list.h"
#include "recipes/common/run_setup.h"

namespace gattn::recipes {

namespace {

constexpr std::int64_t kDefaultGenTokens = -1;  // --gen-tokens not given
constexpr std::int64_t kMaxGenTokens = 10000000;
constexpr int kMaxRepeats = 1000;

struct BenchGenerateArgs {
  std::string checkpoint;
  InferenceArgs inference;
  std::int64_t max_windows = 200;
  std::int64_t gen_tokens = kDefaultGenTokens;  // not given: 4 × model.block_size
  int repeats = 3;
  bool json = false;
  bool gate_int8 = false;
  bool policy_given = false;  // --kv-policy on the command line (else the default list)
  std::vector<std::string> overrides;
};

struct CellResult {
  models::InferenceOptions options;
  double loss = 0;
  std::int64_t tokens = 0;
  std::optional<double> accuracy;
  double skipped_fraction = 0;  // of the teacher-forced head-queries
  double gen_tokens_per_s = 0, gen_after_block_tokens_per_s = 0;
  std::int64_t kv_bytes = 0;
};

// Teacher-forced val loss (and accuracy) through the cache, 32 windows at a time.
void evaluate_cached(models::GPT& model, const Dataset& data, std::int64_t max_windows, CellResult& r) {
  const std::int64_t T = model.config().block_size, windows = data.eval_windows(T, max_windows);
  double loss_sum = 0, right = 0;
  std::int64_t answered = 0;
  models::InferenceCounters counters;
  NoGradGuard no_grad;
  for (std::int64_t first = 0; first < windows; first += 32) {
    const std::int64_t count = std::min<std::int64_t>(32, windows - first);
    const Batch b = data.eval_batch(first, count, T);
    models::KVCache cache(model.config(), count, r.options);
    const Tensor logits = models::forward_in_chunks(model, b.x, cache);
    std::int64_t valid = 0;
    const std::int32_t* y = b.y.data<std::int32_t>();
    for (std::int64_t i = 0; i < b.y.numel(); ++i) valid += y[i] >= 0;
    if (valid == 0) continue;
    loss_sum += ops::cross_entropy(logits, b.y).item() * static_cast<double>(valid);
    r.tokens += valid;
    if (data.reports_accuracy()) {
      right += Dataset::answer_accuracy(logits, b) * static_cast<double>(valid);
      answered += valid;
    }
    counters.head_queries += cache.counters.head_queries;
    counters.skipped += cache.counters.skipped;
  }
  if (r.tokens == 0) throw DataError("bench generate: the validation windows hold no targets");
  r.loss = loss_sum / static_cast<double>(r.tokens);
  if (data.reports_accuracy()) r.accuracy = right / static_cast<double>(answered);
  r.skipped_fraction =
      counters.head_queries ? static_cast<double>(counters.skipped) / static_cast<double>(counters.head_queries) : 0;
}

// Free greedy generation from `start`: the median tokens/s over `repeats` runs, overall and for the
// tokens after the first block (where a learned-position model restarts its cache and a bounded
// one keeps evicting).
void time_generation(models::GPT& model, std::int32_t start, std::int64_t n, int repeats, CellResult& r) {
  using Clock = std::chrono::steady_clock;
  const std::int64_t T = model.config().block_size;
  std::vector<double> overall, after_block;
  models::SamplingOptions greedy;
  greedy.temperature = 0;
  for (int rep = 0; rep < repeats; ++rep) {
    std::int64_t produced = 0;
    Clock::time_point block_end;
    const Clock::time_point t0 = Clock::now();
    models::generate(
        model, {start}, n, greedy,
        [&](std::int32_t) {
          if (++produced == T) block_end = Clock::now();
        },
        r.options);
    const Clock::time_point t1 = Clock::now();
    overall.push_back(static_cast<double>(n) / std::chrono::duration<double>(t1 - t0).count());
    if (n > T)
      after_block.push_back(static_cast<double>(n - T) / std::chrono::duration<double>(t1 - block_end).count());
  }
  r.gen_tokens_per_s = median(overall);
  r.gen_after_block_tokens_per_s = median(after_block);
  // The memory of a cache that has seen a whole block (every per-row term allocated).
  models::KVCache cache(model.config(), 1, r.options);
  std::vector<std::int32_t> ids(static_cast<std::size_t>(T), start);
  models::forward_in_chunks(model, Tensor::from_ints(ids, {1, T}), cache, true);
  r.kv_bytes = cache.bytes();
}

nlohmann::json to_json(const CellResult& r, const CellResult& exact) {
  nlohmann::json j = {{"policy", models::policy_name(r.options.policy)},
                      {"budget", r.options.bounded() ? nlohmann::json(r.options.budget) : nlohmann::json(nullptr)},
                      {"top_k_keys", r.options.top_k_keys},
                      {"skip_heads_below", r.options.skip_heads_below},
                      {"val_loss", r.loss},
                      {"val_loss_change", r.loss / exact.loss - 1},
                      {"tokens", r.tokens},
                      {"skipped_head_queries", r.skipped_fraction},
                      {"gen_tokens_per_s", r.gen_tokens_per_s},
                      {"gen_after_block_tokens_per_s", r.gen_after_block_tokens_per_s},
                      {"kv_bytes", r.kv_bytes}};
  if (r.accuracy) {
    j["accuracy"] = *r.accuracy;
    j["accuracy_change"] = *r.accuracy - *exact.accuracy;
  }
  return j;
}

void print_row(const CellResult& r, const CellResult& exact) {
  const std::string budget = r.options.bounded() ? std::to_string(r.options.budget) : "all";
  char accuracy[32] = "-";
  if (r.accuracy) std::snprintf(accuracy, sizeof accuracy, "%.2f %%", 100 * *r.accuracy);
  char skipped[32] = "-";
  if (r.options.skip_heads_below > 0) std::snprintf(skipped, sizeof skipped, "%.1f %%", 100 * r.skipped_fraction);
  std::printf("%-12s %6s %6lld %9.4f %+8.2f %% %9s %10.0f %12.0f %8.1f %8s\n",
              models::policy_name(r.options.policy).c_str(), budget.c_str(),
              static_cast<long long>(r.options.top_k_keys), r.loss, 100 * (r.loss / exact.loss - 1), accuracy,
              r.gen_tokens_per_s, r.gen_after_block_tokens_per_s, static_cast<double>(r.kv_bytes) / 1024.0, skipped);
  std::fflush(stdout);
}

int run_bench_generate(const BenchGenerateArgs& args) {
  if (args.max_windows < 1) throw ValueError("--max-windows: must be >= 1, got " + std::to_string(args.max_windows));
  // Bounds no sensible measurement reaches: past them a typo would run for days.
  if (args.gen_tokens != kDefaultGenTokens && (args.gen_tokens < 1 || args.gen_tokens > kMaxGenTokens))
    throw ValueError("--gen-tokens: must be in [1, " + std::to_string(kMaxGenTokens) + "], got " +
                     std::to_string(args.gen_tokens));
  if (args.repeats < 1 || args.repeats > kMaxRepeats)
    throw ValueError("--repeats: must be in [1, " + std::to_string(kMaxRepeats) + "], got " +
                     std::to_string(args.repeats));
  CheckpointModel ckpt = load_checkpoint_model(args.checkpoint, args.overrides, "bench generate");
  models::GPT& model = *ckpt.model;
  // The cells measure the decoder-only KV cache on windows of the val text; an encoder–decoder's
  // generation (a source, then its target) is another workload.
  if (model.config().encoder_decoder())
    throw ValueError("bench generate: " + ckpt.model_path +
                     " is an encoder_decoder; the KV-cache policies are measured on decoders (gattn eval and gattn "
                     "sample --source measure it)");
  model.eval();
  const std::optional<models::GateQuantization> int8 = apply_gate_int8(args.gate_int8, model);
  const std::int64_t T = model.config().block_size;
  const std::unique_ptr<Dataset> data = make_dataset(data_options(ckpt.config), T);
  const std::int64_t n = args.gen_tokens != kDefaultGenTokens ? args.gen_tokens : 4 * T;

  // Every cell's options, checked before anything runs: a bad one is one line and exit 2.
  std::vector<models::InferenceOptions> cells;
  std::vector<models::KVPolicy> policies;
  const std::vector<std::string> budgets =
      args.inference.budget.empty() ? std::vector<std::string>{} : split_list(args.inference.budget, "--kv-budget");
  for (const std::string& policy : split_list(args.inference.policy, "--kv-policy")) {
    policies.push_back(models::parse_kv_policy(policy));
    if (models::parse_kv_policy(policy) == models::KVPolicy::full) {
      cells.push_back(inference_options(args.inference, policy, "", model, false));
      continue;
    }
    if (budgets.empty()) throw ValueError("--kv-policy " + policy + ": needs --kv-budget (e.g. 25%,50%,75%)");
    // The default list leaves out `gate` for a model whose gates value no keys; asked for, it is an error.
    if (policy == "gate" && !args.policy_given && !models::gates_value_keys(model)) continue;
    for (const std::string& budget : budgets)
      cells.push_back(inference_options(args.inference, policy, budget, model, false));
  }
  check_policy_flags(args.inference, policies);

  const Batch first = data->eval_batch(0, 1, T);
  const std::int32_t start = first.x.data<std::int32_t>()[0];
  CellResult exact;
  evaluate_cached(model, *data, args.max_windows, exact);
  if (!args.json) {
    std::printf(
        "gattn bench generate: %s\n  val: teacher forcing over %lld tokens; generation: %lld greedy tokens from "
        "batch 1, median of %d (block_size %lld)\n",
        ckpt.model_path.c_str(), static_cast<long long>(exact.tokens), static_cast<long long>(n), args.repeats,
        static_cast<long long>(T));
    if (int8) std::printf("  %s\n", gate_int8_summary(*int8).c_str());
    std::printf("%-12s %6s %6s %9s %10s %9s %10s %12s %8s %8s\n", "policy", "budget", "top-k", "val loss", "vs exact",
                "accuracy", "gen tok/s", "after block", "KV KiB", "skipped");
  }
  for (const models::InferenceOptions& o : cells) {
    CellResult r;
    r.options = o;
    evaluate_cached(model, *data, args.max_windows, r);
    time_generation(model, start, n, args.repeats, r);
    if (args.json) {
      nlohmann::json line = to_json(r, exact);
      if (int8) add_gate_int8_fields(line, *int8);
      std::cout << line.dump() << std::endl;
    } else
      print_row(r, exact);
  }
  return 0;
}

}  // namespace

Action add_bench_generate(CLI::App& bench) {
  auto args = std::make_shared<BenchGenerateArgs>();
  args->inference.policy = "full,window,sink_window,h2o,gate";
  args->inference.budget = "25%,50%,75%";
  CLI::App* cmd = bench.add_subcommand(
      "generate",
      "a checkpoint under each KV-cache policy and budget: teacher-forced val loss (and accuracy), generation tokens/s "
      "and KV memory");
  cmd->add_option("--checkpoint", args->checkpoint,
                  "checkpoint directory (holds model.safetensors), or a run directory for its latest checkpoint")
      ->required();
  add_inference_options(*cmd, args->inference, true);
  cmd->add_option("--max-windows", args->max_windows, "validation windows of block_size tokens")->capture_default_str();
  cmd->add_option("--gen-tokens", args->gen_tokens,
                  "tokens of free generation per timing, 1 … 10⁷ (default 4 × block_size)");
  cmd->add_option("--repeats", args->repeats, "timed generations per cell (the median is reported)")
      ->capture_default_str();
  cmd->add_flag("--json", args->json, "one JSON object per cell and line instead of a table");
  add_gate_int8_option(*cmd, args->gate_int8);
  cmd->add_option("overrides", args->overrides, "key.path=value overrides (e.g. data.path=…)");
  return [args, cmd] {
    args->policy_given = cmd->count("--kv-policy") > 0;
    return run_bench_generate(*args);
  };
}

}  // namespace gattn::recipes
