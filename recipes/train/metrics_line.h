// The train line of metrics.jsonl: step, loss, learning rate, gradient norm, throughput, time, the
// gate and attention statistics, the parameters gate kinds log (the pair gates' α), and every
// regulariser the model computed.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "models/attention.h"
#include "models/gpt.h"

namespace gattn::recipes {

struct TrainLine {
  std::int64_t step = 0;  // optimizer steps done
  double loss = 0, lr = 0, grad_norm = 0, tokens_per_s = 0, elapsed_s = 0;
  std::vector<models::LayerStats> stats;  // empty when not collected
  // Encoder–decoder models: the cross-attention's stats per decoder block and the encoder's per
  // block (empty for a decoder, or when not collected).
  std::vector<models::LayerStats> cross_stats, encoder_stats;
  std::map<std::string, double> regularizers;  // name -> mean over the step's micro-batches
  // Metric name (a kind's GateLoggedParameter, e.g. pair_alpha) -> its value per layer, nullopt in a
  // layer without the kind.
  std::map<std::string, std::vector<std::optional<double>>> gate_parameters;
};

// Every parameter the model's gate kinds log (models::GateKindSpec::logged_parameters), per layer as
// the weights hold it now, under its metric name; a kind no block has is absent. The parameter is
// the kind's under models::gate_parameter_prefix.
std::map<std::string, std::vector<std::optional<double>>> gate_parameters_by_layer(models::GPT& model);

// The line's JSON. A regulariser goes under its name, or <name>_reg where a statistic already has
// that name (attn_entropy). Each logged gate parameter: <metric>_by_layer (null for a layer without
// its kind) and <metric>, their mean (e.g. pair_alpha). An encoder–decoder adds cross_attn_entropy
// and encoder_attn_entropy (means over their layers).
nlohmann::json train_metrics_line(const TrainLine& t);

}  // namespace gattn::recipes
