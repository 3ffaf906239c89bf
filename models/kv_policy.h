// KV-cache eviction under a budget (models/inference_options.h): which rows each head gives up when
// new positions need room, and the checks that a model can serve the options asked for.
//   window       the oldest rows
//   sink_window  the oldest rows after the first `sinks` (StreamingLLM's attention sinks)
//   h2o          the rows with the least accumulated attention, never the newest `recent` (default
//                budget/2)
//   gate         the rows whose gate term is lowest: the column bias the layer's gates add to the
//                key's logit for every later query (score: log g_j; forget: −c_j, which is lowest for
//                the oldest key, since the decay c_i − c_j only grows with age; both: their sum), else
//                the pair gate's column term b_j (its modulation rises with b_j for every query).
//                A layer without such a gate (or only a multiplicative score gate, whose small g_j
//                does not make a key's weight small) evicts as `window`. Never the newest `recent`
//                (default 0).
// Ties go to the oldest row.
#pragma once
#include <cstdint>
#include <vector>

#include "models/gpt.h"
#include "models/inference_options.h"
#include "models/kv_cache.h"

namespace gattn::models {

// Throws ValueError naming the option (--kv-budget, --kv-sinks, --kv-policy, --top-k-keys,
// --skip-heads-below) when `options` are out of range or the model's gates cannot serve them.
void check_inference_options(const InferenceOptions& options, const GPT& model);

// Whether some gate of the model values keys (score additive, forget, pair): what policy gate needs.
bool gates_value_keys(const GPT& model);

// The rows (ascending) key head `bh` (of [B, H_kv]) of `layer` gives up for `count` new positions, of
// `length` held; with grouped-query attention a row's rank sums its query heads' (H2O's accumulated
// attention, the gate's column terms).
std::vector<std::int64_t> rows_to_evict(const InferenceOptions& options, const LayerKVCache& layer, std::int64_t bh,
                                        std::int64_t count, std::int64_t length);

// Makes room for n new positions: under a budget, evicts length + n − capacity rows from every head
// of every layer (counted in cache.counters.evicted). Throws ShapeError when the rows cannot fit: the
// exact cache is full, or n exceeds the capacity.
void make_room(KVCache& cache, std::int64_t n);

}  // namespace gattn::models
