// The per-layer statistics (models::LayerStats) of the whole world: every rank's sums added up, so
// each rank ends with the statistics of the global batch (training) or of all eval windows.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "framework/dist/communicator.h"
#include "models/attention.h"

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

}  // namespace gattn::recipes
