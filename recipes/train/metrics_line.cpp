// The train line of metrics.jsonl.
#include "recipes/train/metrics_line.h"

#include "models/layer_stats_io.h"

namespace gattn::recipes {

nlohmann::json train_metrics_line(const TrainLine& t) {
  nlohmann::json line = {{"step", t.step},           {"split", "train"},
                         {"loss", t.loss},           {"lr", t.lr},
                         {"grad_norm", t.grad_norm}, {"tokens_per_s", t.tokens_per_s},
                         {"elapsed_s", t.elapsed_s}};
  models::add_stats_to_metrics(line, t.stats);
  for (const auto& [name, value] : t.regularizers) line[line.contains(name) ? name + "_reg" : name] = value;
  return line;
}

}  // namespace gattn::recipes
