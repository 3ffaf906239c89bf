// Serialising the per-layer statistics (LayerStats, models/attention.h): the fields of a
// metrics.jsonl line (means over layers and per-layer arrays), and a flat vector of sums and counts
// that ranks add up (an all-reduce of sums gives the global batch's statistics).
#pragma once
#include <nlohmann/json.hpp>
#include <vector>

#include "models/attention.h"

namespace gattn::models {

// Adds attn_entropy, sink_ratio (means over layers) and their _by_layer arrays, and where any layer
// has gate values gate_mean, gate_std, gate_frac_lt_0.1, gate_frac_gt_0.9 (over all gate values of
// the model) with their _by_layer arrays (null for a layer without gates).
void add_stats_to_metrics(nlohmann::json& line, const std::vector<LayerStats>& stats);

// The sums and counts of every layer, in a fixed order; unflatten_stats reads them back into stats
// of the same length.
std::vector<double> flatten_stats(const std::vector<LayerStats>& stats);
void unflatten_stats(const std::vector<double>& flat, std::vector<LayerStats>& stats);

}  // namespace gattn::models
