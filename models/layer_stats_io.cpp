// The statistics as metrics.jsonl fields, their sum over batches, and the flat sums ranks all-reduce.
#include "models/layer_stats_io.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

#include "core/tensor/error.h"

namespace gattn::models {

namespace {

// Per layer: two GateMoments (the modulation's, the layer's gates') of 5 fields, then the entropy
// and sink sums and counts, the pruned and visited tile pairs; then 5 fields per head of gate_by_head.
constexpr std::size_t kMomentFields = 5;
constexpr std::size_t kStatsFields = 2 * kMomentFields + 6;

void put(std::vector<double>& out, const ops::GateMoments& g) {
  out.insert(out.end(), {g.sum, g.sum_sq, static_cast<double>(g.count), static_cast<double>(g.below_0_1),
                         static_cast<double>(g.above_0_9)});
}

const double* get(const double* f, ops::GateMoments& g) {
  auto as_int = [](double x) { return static_cast<std::int64_t>(std::llround(x)); };
  g.sum = f[0];
  g.sum_sq = f[1];
  g.count = as_int(f[2]);
  g.below_0_1 = as_int(f[3]);
  g.above_0_9 = as_int(f[4]);
  return f + kMomentFields;
}

nlohmann::json mean_or_null(const ops::GateMoments& g) { return g.count > 0 ? nlohmann::json(g.mean()) : nullptr; }
nlohmann::json std_or_null(const ops::GateMoments& g) { return g.count > 0 ? nlohmann::json(g.std()) : nullptr; }

}  // namespace

void add_stats_to_metrics(nlohmann::json& line, const std::vector<LayerStats>& stats) {
  ops::GateMoments all;
  nlohmann::json gate_mean = nlohmann::json::array(), entropy = nlohmann::json::array(), sink = nlohmann::json::array();
  nlohmann::json lt = nlohmann::json::array(), gt = nlohmann::json::array(), gstd = nlohmann::json::array();
  nlohmann::json head_mean = nlohmann::json::array(), head_std = nlohmann::json::array();
  bool any_by_head = false;
  double entropy_sum = 0, sink_sum = 0;
  for (const auto& s : stats) {
    all.merge(s.gate);
    entropy.push_back(s.attn_entropy());
    sink.push_back(s.sink_ratio());
    entropy_sum += s.attn_entropy();
    sink_sum += s.sink_ratio();
    if (s.gate.count > 0) {
      gate_mean.push_back(s.gate.mean());
      gstd.push_back(s.gate.std());
      lt.push_back(s.gate.frac_below_0_1());
      gt.push_back(s.gate.frac_above_0_9());
    } else {
      gate_mean.push_back(nullptr);
      gstd.push_back(nullptr);
      lt.push_back(nullptr);
      gt.push_back(nullptr);
    }
    if (s.gate_by_head.empty()) {
      head_mean.push_back(nullptr);
      head_std.push_back(nullptr);
    } else {
      any_by_head = true;
      nlohmann::json m = nlohmann::json::array(), sd = nlohmann::json::array();
      for (const ops::GateMoments& h : s.gate_by_head) {
        m.push_back(mean_or_null(h));
        sd.push_back(std_or_null(h));
      }
      head_mean.push_back(std::move(m));
      head_std.push_back(std::move(sd));
    }
  }
  const double n = stats.empty() ? 1.0 : static_cast<double>(stats.size());
  add_act_max(line, stats, "");
  line["attn_entropy"] = entropy_sum / n;
  line["sink_ratio"] = sink_sum / n;
  line["attn_entropy_by_layer"] = entropy;
  line["sink_ratio_by_layer"] = sink;
  if (all.count > 0) {
    line["gate_mean"] = all.mean();
    line["gate_std"] = all.std();
    line["gate_frac_lt_0.1"] = all.frac_below_0_1();
    line["gate_frac_gt_0.9"] = all.frac_above_0_9();
    line["gate_mean_by_layer"] = gate_mean;
    line["gate_std_by_layer"] = gstd;
    line["gate_frac_lt_0.1_by_layer"] = lt;
    line["gate_frac_gt_0.9_by_layer"] = gt;
  }
  if (any_by_head) {
    line["gate_mean_by_head"] = head_mean;
    line["gate_std_by_head"] = head_std;
  }
  add_pruned_tiles(line, stats);
}

void add_pruned_tiles(nlohmann::json& line, const std::vector<LayerStats>& stats) {
  // The share of the attention's tile pairs adaptive computation pruning skipped: over every pair of
  // every layer, and per layer (null for a layer without pruning). Absent when no layer prunes.
  std::int64_t pruned = 0, pairs = 0;
  nlohmann::json by_layer = nlohmann::json::array();
  for (const LayerStats& s : stats) {
    pruned += s.attention.pruned_tiles;
    pairs += s.attention.pruned_tiles + s.attention.visited_tiles;
    const std::optional<double> frac = s.pruned_tile_frac();
    by_layer.push_back(frac ? nlohmann::json(*frac) : nlohmann::json(nullptr));
  }
  if (pairs == 0) return;
  line["attn_pruned_tile_frac"] = static_cast<double>(pruned) / static_cast<double>(pairs);
  line["attn_pruned_tile_frac_by_layer"] = by_layer;
}

void add_act_max(nlohmann::json& line, const std::vector<LayerStats>& stats, const std::string& prefix) {
  if (stats.empty()) return;
  nlohmann::json by_layer = nlohmann::json::array();
  double largest = 0;
  for (const LayerStats& s : stats) {
    by_layer.push_back(s.act_max);
    largest = std::max(largest, s.act_max);
  }
  line[prefix + "act_max"] = largest;
  line[prefix + "act_max_by_layer"] = by_layer;
}

void add_val_attention_stats(nlohmann::json& line, const std::vector<LayerStats>& stats) {
  if (stats.empty()) return;
  // The attention's own measures, for gated and ungated models alike: the first-token share (Qiu et
  // al. 2025's attention-sink measure) and the row entropy, means over the layers.
  double entropy = 0, sink = 0;
  for (const LayerStats& s : stats) {
    entropy += s.attn_entropy();
    sink += s.sink_ratio();
  }
  line["val_attn_entropy"] = entropy / static_cast<double>(stats.size());
  line["val_sink_ratio"] = sink / static_cast<double>(stats.size());
}

void add_val_gate_stats(nlohmann::json& line, const std::vector<LayerStats>& stats) {
  ops::GateMoments all;
  nlohmann::json by_layer = nlohmann::json::array();
  for (const LayerStats& s : stats) {
    all.merge(s.gate);
    by_layer.push_back(mean_or_null(s.gate));
  }
  if (all.count == 0) return;
  line["val_gate_mean"] = all.mean();
  line["val_gate_std"] = all.std();
  line["val_gate_frac_lt_0.1"] = all.frac_below_0_1();
  line["val_gate_mean_by_layer"] = by_layer;
}

void merge_stats(std::vector<LayerStats>& into, const std::vector<LayerStats>& from) {
  if (into.empty()) {
    into = from;
    return;
  }
  if (from.empty()) return;
  if (into.size() != from.size())
    throw ValueError("merge_stats: stats of " + std::to_string(from.size()) + " layers added to stats of " +
                     std::to_string(into.size()));
  for (std::size_t l = 0; l < into.size(); ++l) {
    LayerStats& a = into[l];
    const LayerStats& b = from[l];
    a.attention.merge(b.attention);
    a.gate.merge(b.gate);
    a.act_max = std::max(a.act_max, b.act_max);
    if (b.gate_by_head.empty()) continue;
    if (a.gate_by_head.empty()) a.gate_by_head.resize(b.gate_by_head.size());
    if (a.gate_by_head.size() != b.gate_by_head.size())
      throw ValueError("merge_stats: layer " + std::to_string(l) + " has " + std::to_string(b.gate_by_head.size()) +
                       " heads' gate values to add to " + std::to_string(a.gate_by_head.size()));
    for (std::size_t h = 0; h < a.gate_by_head.size(); ++h) a.gate_by_head[h].merge(b.gate_by_head[h]);
  }
}

// LayerStats are sums and counts, so the statistics of the global batch are the ranks' sums added.
std::vector<double> flatten_stats(const std::vector<LayerStats>& stats) {
  std::vector<double> out;
  for (const auto& s : stats) {
    const ops::AttentionStats& a = s.attention;
    put(out, a.modulation);
    put(out, s.gate);
    out.insert(out.end(),
               {a.entropy_sum, static_cast<double>(a.entropy_count), a.sink_sum, static_cast<double>(a.sink_count),
                static_cast<double>(a.pruned_tiles), static_cast<double>(a.visited_tiles)});
    for (const ops::GateMoments& h : s.gate_by_head) put(out, h);
  }
  return out;
}

void unflatten_stats(const std::vector<double>& v, std::vector<LayerStats>& stats) {
  std::size_t expected = 0;
  for (const LayerStats& s : stats) expected += kStatsFields + kMomentFields * s.gate_by_head.size();
  if (v.size() != expected)
    throw ValueError("unflatten_stats: " + std::to_string(v.size()) + " values for stats laid out in " +
                     std::to_string(expected) + " (the ranks' models differ?)");
  auto as_int = [](double x) { return static_cast<std::int64_t>(std::llround(x)); };
  const double* f = v.data();
  for (LayerStats& s : stats) {
    ops::AttentionStats& a = s.attention;
    f = get(f, a.modulation);
    f = get(f, s.gate);
    a.entropy_sum = f[0];
    a.entropy_count = as_int(f[1]);
    a.sink_sum = f[2];
    a.sink_count = as_int(f[3]);
    a.pruned_tiles = as_int(f[4]);
    a.visited_tiles = as_int(f[5]);
    f += 6;
    for (ops::GateMoments& h : s.gate_by_head) f = get(f, h);
  }
}

}  // namespace gattn::models
