// The statistics as metrics.jsonl fields and as the flat sums ranks all-reduce.
#include "models/layer_stats_io.h"

#include <cmath>
#include <cstdint>

namespace gattn::models {

namespace {

// Per layer: two GateMoments (the modulation's, the layer's gates') of 5 fields, then the entropy
// and sink sums and counts.
constexpr std::size_t kStatsFields = 14;

}  // namespace

void add_stats_to_metrics(nlohmann::json& line, const std::vector<LayerStats>& stats) {
  ops::GateMoments all;
  nlohmann::json gate_mean = nlohmann::json::array(), entropy = nlohmann::json::array(), sink = nlohmann::json::array();
  nlohmann::json lt = nlohmann::json::array(), gt = nlohmann::json::array(), gstd = nlohmann::json::array();
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
  }
  const double n = stats.empty() ? 1.0 : static_cast<double>(stats.size());
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
}

// LayerStats are sums and counts, so the statistics of the global batch are the ranks' sums added.
std::vector<double> flatten_stats(const std::vector<LayerStats>& stats) {
  std::vector<double> out;
  for (const auto& s : stats) {
    const ops::AttentionStats& a = s.attention;
    for (const ops::GateMoments* g : {&a.modulation, &s.gate})
      out.insert(out.end(), {g->sum, g->sum_sq, static_cast<double>(g->count), static_cast<double>(g->below_0_1),
                             static_cast<double>(g->above_0_9)});
    out.insert(out.end(),
               {a.entropy_sum, static_cast<double>(a.entropy_count), a.sink_sum, static_cast<double>(a.sink_count)});
  }
  return out;
}

void unflatten_stats(const std::vector<double>& v, std::vector<LayerStats>& stats) {
  auto as_int = [](double x) { return static_cast<std::int64_t>(std::llround(x)); };
  for (std::size_t l = 0; l < stats.size(); ++l) {
    const double* f = v.data() + l * kStatsFields;
    ops::AttentionStats& a = stats[l].attention;
    for (ops::GateMoments* g : {&a.modulation, &stats[l].gate}) {
      g->sum = f[0];
      g->sum_sq = f[1];
      g->count = as_int(f[2]);
      g->below_0_1 = as_int(f[3]);
      g->above_0_9 = as_int(f[4]);
      f += 5;
    }
    a.entropy_sum = f[0];
    a.entropy_count = as_int(f[1]);
    a.sink_sum = f[2];
    a.sink_count = as_int(f[3]);
  }
}

}  // namespace gattn::models
