// The command-line options of gated inference (`gattn sample`, `gattn bench generate`): the KV
// policy and budget, the sink count, top-k keys and head skipping, turned into
// models::InferenceOptions and checked against the checkpoint's model (one line naming the option,
// exit 2).
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "models/gpt.h"
#include "models/inference_options.h"

namespace gattn::recipes {

struct InferenceArgs {
  std::string policy = "full";
  std::string budget;        // "N" keys or "P%" of model.block_size; empty: none given
  std::int64_t sinks = -1;   // -1: min(4, max(1, budget/4)), StreamingLLM's 4 where the budget allows
  std::int64_t recent = -1;  // -1: the policy's own (h2o budget/2, gate 0)
  std::int64_t top_k_keys = 0;
  double skip_heads_below = 0;
};

// Adds --kv-policy, --kv-budget, --kv-sinks, --kv-recent, --top-k-keys and --skip-heads-below to `cmd`. With
// `lists`, --kv-policy and --kv-budget take comma-separated lists (a grid of cells).
void add_inference_options(CLI::App& cmd, InferenceArgs& args, bool lists);

// "N" or "P%" (rounded to the nearest key, at least 1) of block_size; throws ValueError naming
// --kv-budget for anything else or a value <= 0.
std::int64_t parse_kv_budget(const std::string& text, std::int64_t block_size);

// The options of one policy and budget text (empty for full), checked against `model`; with
// `check_flags`, --kv-sinks and --kv-recent must mean something for this policy.
models::InferenceOptions inference_options(const InferenceArgs& args, const std::string& policy,
                                           const std::string& budget, const models::GPT& model,
                                           bool check_flags = true);

// ValueError when --kv-sinks or --kv-recent is given and none of `policies` reads it.
void check_policy_flags(const InferenceArgs& args, const std::vector<models::KVPolicy>& policies);

// "kv policy h2o, budget 32 keys per head: 1234 keys evicted; top-k keys 8; 12.5 % of head-queries
// skipped (below 0.1)": what a generation left out, for the terminal.
std::string inference_summary(const models::InferenceOptions& options, const models::InferenceCounters& counters);

}  // namespace gattn::recipes
