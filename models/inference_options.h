// What generation may leave out to save compute (docs/inference.md): a KV-cache policy that keeps at
// most `budget` keys per layer and head, top-k keys per query, and head skipping under a headwise
// output gate. The default (policy full, nothing skipped) is exact generation.
#pragma once
#include <cstdint>
#include <string>

namespace gattn::models {

enum class KVPolicy {
  full,         // every position of the block (exact)
  window,       // the newest `budget` positions
  sink_window,  // StreamingLLM: the first `sinks` positions plus the newest budget − sinks
  h2o,          // Heavy-Hitter Oracle: the newest budget/2 plus the keys with the most accumulated attention
  gate,         // the keys the gates value least go first (models/kv_policy.h says per kind), none
                // of the newest `recent`
};

struct InferenceOptions {
  KVPolicy policy = KVPolicy::full;
  std::int64_t budget = 0;  // keys kept per layer and head (every policy but full)
  std::int64_t sinks = 4;   // sink_window: attention-sink positions always kept
  // h2o and gate: the newest positions never evicted; -1: the policy's own (h2o budget/2, gate 0).
  std::int64_t recent = -1;
  std::int64_t top_k_keys = 0;  // > 0: each query attends to its k highest-scoring keys only
  double skip_heads_below = 0;  // > 0: a head whose output gate is below it skips its attention

  bool bounded() const { return policy != KVPolicy::full; }
  std::int64_t recent_kept() const { return recent >= 0 ? recent : policy == KVPolicy::h2o ? budget / 2 : 0; }
  bool exact() const { return !bounded() && top_k_keys == 0 && skip_heads_below <= 0; }
};

// "full", "window", "sink_window", "h2o", "gate".
std::string policy_name(KVPolicy policy);
// Throws ValueError ("--kv-policy: …") for a name that is none of them.
KVPolicy parse_kv_policy(const std::string& name);

// What a generation skipped, for `gattn bench generate` and `gattn sample`'s summary.
struct InferenceCounters {
  std::int64_t head_queries = 0;  // (layer, head, query) attentions asked for
  std::int64_t skipped = 0;       // of them, skipped by --skip-heads-below
  std::int64_t evicted = 0;       // (layer, head, key) evictions
};

}  // namespace gattn::models
