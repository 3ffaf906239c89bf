// The train line of metrics.jsonl.
#include "recipes/train/metrics_line.h"

#include <cmath>

#include "models/gating/registry.h"
#include "models/layer_stats_io.h"
#include "recipes/common/stats_reduce.h"

namespace gattn::recipes {

std::map<std::string, std::vector<std::optional<double>>> gate_parameters_by_layer(models::GPT& model) {
  const models::ModelConfig& mc = model.config();
  std::map<std::string, std::vector<std::optional<double>>> out;
  for (const models::GateKindSpec* kind : models::gate_kinds()) {
    for (const models::GateLoggedParameter& p : kind->logged_parameters) {
      std::vector<std::optional<double>> by_layer(static_cast<std::size_t>(mc.n_layer));
      bool any = false;
      for (std::int64_t l = 0; l < mc.n_layer; ++l) {
        bool has = false;
        for (const models::GateConfig& g : mc.layer_gates(l)) has = has || g.kind == kind->name;
        if (!has) continue;
        const double v = model.parameter(models::gate_parameter_prefix(mc, l, kind->name) + p.parameter).item();
        by_layer[static_cast<std::size_t>(l)] = p.value(v);
        any = true;
      }
      if (any) out[p.metric] = std::move(by_layer);
    }
  }
  return out;
}

nlohmann::json train_metrics_line(const TrainLine& t) {
  nlohmann::json line = {{"step", t.step},           {"split", "train"},
                         {"loss", t.loss},           {"lr", t.lr},
                         {"grad_norm", t.grad_norm}, {"tokens_per_s", t.tokens_per_s},
                         {"elapsed_s", t.elapsed_s}};
  models::add_stats_to_metrics(line, t.stats);
  if (const auto cross = mean_attn_entropy(t.cross_stats)) line["cross_attn_entropy"] = *cross;
  if (const auto encoder = mean_attn_entropy(t.encoder_stats)) line["encoder_attn_entropy"] = *encoder;
  add_encoder_gate_stats(line, t.encoder_stats, "");
  for (const auto& [metric, values] : t.gate_parameters) {
    nlohmann::json by_layer = nlohmann::json::array();
    double sum = 0;
    int n = 0;
    for (const std::optional<double>& a : values) {
      by_layer.push_back(a ? nlohmann::json(*a) : nlohmann::json(nullptr));
      if (a) {
        sum += *a;
        ++n;
      }
    }
    line[metric + "_by_layer"] = by_layer;
    if (n > 0) line[metric] = sum / n;
  }
  for (const auto& [name, value] : t.regularizers) line[line.contains(name) ? name + "_reg" : name] = value;
  return line;
}

}  // namespace gattn::recipes
