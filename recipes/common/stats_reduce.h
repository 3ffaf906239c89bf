// The per-layer statistics (models::LayerStats) of the whole world: every rank's sums added up, so
// each rank ends with the statistics of the global batch (training) or of all eval windows. Also the
// attention entropy over a stack's layers, which the metrics of encoder–decoder runs report.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "framework/dist/communicator.h"
#include "models/attention.h"
#include "models/config.h"

namespace gattn::recipes {

// Collective: every rank of `comm` calls it, with the stats of its own rows. The flat layout
// (models::flatten_stats) follows each layer's number of per-head values, which the model decides
// and which is the same on every rank; a rank whose stats are empty or lack a layer's per-head
// values (it ran no batch: an eval with fewer batches than ranks) is padded with zeros to the
// shape the other ranks have (agreed by a max all-reduce of the sizes) before the sums are added.
// `n_layer` is the model's. `what` names the collective in timeout messages. A world of one leaves
// `stats` as it is.
void all_reduce_stats(dist::Communicator& comm, std::vector<models::LayerStats>& stats, std::int64_t n_layer,
                      const std::string& what);

// The statistics a forward reports (models::ForwardResult): per decoder block, and for an
// encoder–decoder per decoder block's cross-attention and per encoder block. One collective for
// all three (as all_reduce_stats, each list empty or of its model size); a decoder's `cross` and
// `encoder` stay empty.
struct ForwardStats {
  std::vector<models::LayerStats> stats, cross, encoder;
  // Adds a forward's (or another sum's) statistics (models::merge_stats on each list).
  void merge(const ForwardStats& from);
  bool empty() const { return stats.empty() && cross.empty() && encoder.empty(); }
};
void all_reduce_stats(dist::Communicator& comm, ForwardStats& stats, const models::ModelConfig& model,
                      const std::string& what);

// The mean over layers of LayerStats::attn_entropy (nats); nullopt for no layers (a decoder's cross
// and encoder statistics), so a key is written only where the model has that attention.
std::optional<double> mean_attn_entropy(const std::vector<models::LayerStats>& stats);

// The encoder's gate values, pooled over its blocks, as `<prefix>gate_mean` and
// `<prefix>gate_frac_lt_0.1` in a metrics line (the decoder's are gate_mean and its companions);
// nothing when no encoder block has a gate.
void add_encoder_gate_stats(nlohmann::json& line, const std::vector<models::LayerStats>& encoder,
                            const std::string& prefix);

}  // namespace gattn::recipes
