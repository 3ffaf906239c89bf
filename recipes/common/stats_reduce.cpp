// Adding up the ranks' per-layer statistics.
#include "recipes/common/stats_reduce.h"

#include "core/tensor/error.h"
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
  // act_max is a largest value, not a sum: its own all-reduce.
  std::vector<double> act_max(L);
  for (std::size_t l = 0; l < L; ++l) act_max[l] = stats[l].act_max;
  act_max = comm.all_reduce_host(act_max, dist::ReduceOp::max, what + " (act_max)");
  for (std::size_t l = 0; l < L; ++l) stats[l].act_max = act_max[l];
}

std::optional<double> mean_attn_entropy(const std::vector<models::LayerStats>& stats) {
  if (stats.empty()) return std::nullopt;
  double sum = 0;
  for (const models::LayerStats& s : stats) sum += s.attn_entropy();
  return sum / static_cast<double>(stats.size());
}

void add_encoder_gate_stats(nlohmann::json& line, const std::vector<models::LayerStats>& encoder,
                            const std::string& prefix) {
  ops::GateMoments all;
  for (const models::LayerStats& s : encoder) all.merge(s.gate);
  if (all.count == 0) return;
  line[prefix + "encoder_gate_mean"] = all.mean();
  line[prefix + "encoder_gate_frac_lt_0.1"] = all.frac_below_0_1();
}

void ForwardStats::merge(const ForwardStats& from) {
  models::merge_stats(stats, from.stats);
  models::merge_stats(cross, from.cross);
  models::merge_stats(encoder, from.encoder);
}

void all_reduce_stats(dist::Communicator& comm, ForwardStats& stats, const models::ModelConfig& model,
                      const std::string& what) {
  if (comm.size() == 1) return;
  // The three lists end to end, each at its model size (a rank that ran no batch pads with zeros,
  // as all_reduce_stats does), so one all-reduce carries them all.
  const auto L = static_cast<std::size_t>(model.n_layer);
  const std::size_t cross = model.encoder_decoder() ? L : 0;
  const auto E = static_cast<std::size_t>(model.encoder_layers());
  const auto sized = [&](std::vector<models::LayerStats>& part, std::size_t n, const char* name) {
    if (!part.empty() && part.size() != n)
      throw ValueError(std::string("all_reduce_stats: ") + name + " stats of " + std::to_string(part.size()) +
                       " layers for a model of " + std::to_string(n));
    part.resize(n);
  };
  sized(stats.stats, L, "decoder");
  sized(stats.cross, cross, "cross-attention");
  sized(stats.encoder, E, "encoder");
  std::vector<models::LayerStats> all = stats.stats;
  all.insert(all.end(), stats.cross.begin(), stats.cross.end());
  all.insert(all.end(), stats.encoder.begin(), stats.encoder.end());
  all_reduce_stats(comm, all, static_cast<std::int64_t>(all.size()), what);
  const auto at = [&](std::size_t first, std::size_t n) {
    return std::vector<models::LayerStats>(all.begin() + static_cast<std::ptrdiff_t>(first),
                                           all.begin() + static_cast<std::ptrdiff_t>(first + n));
  };
  stats.stats = at(0, L);
  stats.cross = at(L, cross);
  stats.encoder = at(L + cross, E);
}

}  // namespace gattn::recipes
