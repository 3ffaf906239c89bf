// Parsing and checking of the gated-inference options.
#include "recipes/common/inference_args.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/tensor/error.h"
#include "models/kv_policy.h"

namespace gattn::recipes {

void add_inference_options(CLI::App& cmd, InferenceArgs& args, bool lists) {
  const std::string several = lists ? ", comma-separated" : "";
  cmd.add_option("--kv-policy", args.policy,
                 "KV cache under a budget: full (exact), window, sink_window (StreamingLLM), h2o, gate (evict the "
                 "keys the gates value least)" +
                     several)
      ->capture_default_str();
  cmd.add_option("--kv-budget", args.budget,
                 "keys kept per layer and head: N, or P% of model.block_size (every policy but full)" + several);
  // -1 is the unset default: a negative count given on the command line is refused, not read as it.
  cmd.add_option("--kv-sinks", args.sinks,
                 "sink_window: the first positions always kept (default min(4, budget/4), at least 1)")
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--kv-recent", args.recent,
                 "h2o and gate: the newest keys never evicted (default: h2o budget/2, gate 0)")
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--top-k-keys", args.top_k_keys, "each query attends to its K highest-scoring keys; 0 = all")
      ->capture_default_str();
  cmd.add_option("--skip-heads-below", args.skip_heads_below,
                 "skip a head's attention for a query whose headwise output gate is below this; 0 = never")
      ->capture_default_str();
}

std::int64_t parse_kv_budget(const std::string& text, std::int64_t block_size) {
  const bool percent = !text.empty() && text.back() == '%';
  const std::string number = percent ? text.substr(0, text.size() - 1) : text;
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(number, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (number.empty() || used != number.size() || !std::isfinite(v) || (!percent && v != std::floor(v)))
    throw ValueError("--kv-budget: expected a number of keys or a percentage of the context like 50%, got '" + text +
                     "'");
  // A percentage is of the context: above 100 % it would be rounded down to the context in silence.
  if (percent && v > 100)
    throw ValueError("--kv-budget: a percentage of the context must be at most 100%, got " + text);
  const double keys = percent ? std::round(v / 100.0 * static_cast<double>(block_size)) : v;
  if (v <= 0 || keys < 1)
    throw ValueError("--kv-budget: must be between 1 and the context (model.block_size=" + std::to_string(block_size) +
                     "), got " + text);
  return static_cast<std::int64_t>(keys);
}

void check_policy_flags(const InferenceArgs& args, const std::vector<models::KVPolicy>& policies) {
  const auto any = [&](std::initializer_list<models::KVPolicy> wanted) {
    for (models::KVPolicy p : policies)
      for (models::KVPolicy w : wanted)
        if (p == w) return true;
    return false;
  };
  // A flag no chosen policy reads would be ignored in silence.
  if (args.sinks >= 0 && !any({models::KVPolicy::sink_window}))
    throw ValueError("--kv-sinks: only --kv-policy sink_window keeps sink positions; the policy chosen has none");
  if (args.recent >= 0 && !any({models::KVPolicy::h2o, models::KVPolicy::gate}))
    throw ValueError(
        "--kv-recent: only --kv-policy h2o and gate keep the newest keys apart; the policy chosen "
        "evicts by position");
}

models::InferenceOptions inference_options(const InferenceArgs& args, const std::string& policy,
                                           const std::string& budget, const models::GPT& model, bool check_flags) {
  models::InferenceOptions o;
  o.policy = models::parse_kv_policy(policy);
  if (check_flags) check_policy_flags(args, {o.policy});
  if (o.bounded() && budget.empty())
    throw ValueError("--kv-policy " + policy + ": needs --kv-budget (keys per head, or a percentage like 50%)");
  if (!o.bounded() && !budget.empty())
    throw ValueError("--kv-budget: policy full keeps every key; choose window, sink_window, h2o or gate");
  if (o.bounded()) o.budget = parse_kv_budget(budget, model.config().block_size);
  o.sinks = args.sinks >= 0 ? args.sinks : std::min<std::int64_t>(4, std::max<std::int64_t>(1, o.budget / 4));
  o.recent = args.recent;
  o.top_k_keys = args.top_k_keys;
  o.skip_heads_below = args.skip_heads_below;
  models::check_inference_options(o, model);
  return o;
}

std::string inference_summary(const models::InferenceOptions& o, const models::InferenceCounters& c) {
  std::string out = "kv policy " + models::policy_name(o.policy);
  if (o.bounded())
    out += ", budget " + std::to_string(o.budget) + " keys per head: " + std::to_string(c.evicted) + " keys evicted";
  if (o.top_k_keys > 0) out += "; top-k keys " + std::to_string(o.top_k_keys);
  if (o.skip_heads_below > 0) {
    char line[96];
    std::snprintf(line, sizeof line, "; %.1f %% of head-queries skipped (gate below %g)",
                  c.head_queries ? 100.0 * static_cast<double>(c.skipped) / static_cast<double>(c.head_queries) : 0.0,
                  o.skip_heads_below);
    out += line;
  }
  return out;
}

}  // namespace gattn::recipes
