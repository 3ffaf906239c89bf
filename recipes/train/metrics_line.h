// The train line of metrics.jsonl: step, loss, learning rate, gradient norm, throughput, time, the
// gate and attention statistics, and every regulariser the model computed.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/attention.h"

namespace gattn::recipes {

struct TrainLine {
  std::int64_t step = 0;  // optimizer steps done
  double loss = 0, lr = 0, grad_norm = 0, tokens_per_s = 0, elapsed_s = 0;
  std::vector<models::LayerStats> stats;       // empty when not collected
  std::map<std::string, double> regularizers;  // name -> mean over the step's micro-batches
};

// The line's JSON. A regulariser goes under its name, or <name>_reg where a statistic already has
// that name (attn_entropy).
nlohmann::json train_metrics_line(const TrainLine& t);

}  // namespace gattn::recipes
