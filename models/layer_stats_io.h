// Serialising the per-layer statistics (LayerStats, models/attention.h): the fields of a
// metrics.jsonl line (means over layers and per-layer and per-head arrays), the sum of the stats of
// several batches, and a flat vector of sums and counts that ranks add up (an all-reduce of sums
// gives the global batch's statistics).
#pragma once
#include <nlohmann/json.hpp>
#include <vector>

#include "models/attention.h"

namespace gattn::models {

// Adds attn_entropy, sink_ratio (means over layers) and their _by_layer arrays, and where any layer
// has gate values gate_mean, gate_std, gate_frac_lt_0.1, gate_frac_gt_0.9 (over all gate values of
// the model) with their _by_layer arrays (null for a layer without gates). Where any layer has
// per-head values (LayerStats::gate_by_head), also gate_mean_by_head and gate_std_by_head: arrays
// [L][H], a layer without per-head values giving null in place of its row and a head without
// values null in place of its number.
void add_stats_to_metrics(nlohmann::json& line, const std::vector<LayerStats>& stats);
// attn_pruned_tile_frac (the share of the attention's tile pairs adaptive computation pruning
// skipped, over every layer) and attn_pruned_tile_frac_by_layer, where some layer prunes; part of
// add_stats_to_metrics.
void add_pruned_tiles(nlohmann::json& line, const std::vector<LayerStats>& stats);

// The gate statistics of a val line (metrics.jsonl) and of `gattn eval`: val_gate_mean, val_gate_std
// (over all gate values of the model) and val_gate_mean_by_layer (null for a layer without gates),
// only where some layer has gate values.
void add_val_gate_stats(nlohmann::json& line, const std::vector<LayerStats>& stats);
// `val_attn_entropy`, `val_sink_ratio`: means over the layers (nothing without stats).
void add_val_attention_stats(nlohmann::json& line, const std::vector<LayerStats>& stats);
// `<prefix>act_max` (the largest over the layers) and `<prefix>act_max_by_layer`; nothing without stats.
void add_act_max(nlohmann::json& line, const std::vector<LayerStats>& stats, const std::string& prefix);

// Adds the sums and counts of `from` to `into` (the stats of several batches of the same model):
// an empty `into` takes `from`'s shape, and so does a layer of `into` without per-head values. Throws
// ValueError when both have layers or per-head values and their numbers differ.
void merge_stats(std::vector<LayerStats>& into, const std::vector<LayerStats>& from);

// The sums and counts of every layer, in a fixed order: per layer the attention's and the gates'
// fields, then those of each head in gate_by_head. The layout therefore depends on how many layers
// there are and how many heads each reports; every rank of a run holds the same model, whose gates
// decide that, so the ranks' vectors line up (a rank that ran no batch pads its stats to the shape
// first: recipes/common/stats_reduce.h). unflatten_stats reads the sums back into stats of that
// same shape (a layer without per-head values stays without them) and throws ValueError when the
// vector's length does not match it.
std::vector<double> flatten_stats(const std::vector<LayerStats>& stats);
void unflatten_stats(const std::vector<double>& flat, std::vector<LayerStats>& stats);

}  // namespace gattn::models
