// Adding up the ranks' per-layer statistics.
#include "recipes/common/stats_reduce.h"

#include "framework/tensor/error.h"
#include "models/layer_stats_io.h"

namespace gattn::recipes {

void all_reduce_stats(dist::Communicator& comm, std::vector<models::LayerStats>& stats, std::int64_t n_layer,
                      const std::string& what) {
  if (comm.size() == 1) return;
  const auto L = static_cast<std::size_t>(n_layer);
  if (stats.size() > L)
    throw ValueError("all_reduce_stats: stats of " + std::to_string(stats.size()) + " layers for a model of " +
                     std::to_string(L));
  stats.resize(L);
  // The shape first: per layer how many heads report values (0 = none), the largest any rank has.
  std::vector<double> heads(L);
  for (std::size_t l = 0; l < L; ++l) heads[l] = static_cast<double>(stats[l].gate_by_head.size());
  heads = comm.all_reduce_host(heads, dist::ReduceOp::max, what + " (their shape)");
  for (std::size_t l = 0; l < L; ++l) {
    const auto h = static_cast<std::size_t>(heads[l]);
    if (stats[l].gate_by_head.empty()) stats[l].gate_by_head.resize(h);
    if (stats[l].gate_by_head.size() != h)
      throw ValueError("all_reduce_stats: layer " + std::to_string(l) + " reports " +
                       std::to_string(stats[l].gate_by_head.size()) + " heads here and " + std::to_string(h) +
                       " on another rank");
  }
  models::unflatten_stats(comm.all_reduce_host(models::flatten_stats(stats), dist::ReduceOp::sum, what), stats);
}

}  // namespace gattn::recipes
