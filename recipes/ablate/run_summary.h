// What `gattn ablate` and `gattn report` read back from a run directory (docs/run-directory.md): the metrics
// lines, the final numbers of a run (val loss and accuracy, gate and attention statistics, speed,
// size, compute, generation speed), and mean ± std over seeds.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "models/config.h"

namespace gattn::recipes {

struct RunRecord {
  std::string dir;
  std::string name;  // the directory's last component
  std::vector<nlohmann::json> metrics;
  nlohmann::json config;                     // the resolved config (config.yaml) as JSON; null when the run has none
  std::optional<models::ModelConfig> model;  // its model (shape, gates); unset when it cannot be read
  std::int64_t last_step = 0;
  // Final values: the last val line, and the last train line's statistics. Unset when not logged
  // (e.g. gates of kind none, accuracy of text data).
  std::optional<double> val_loss, val_accuracy, gate_mean, gate_frac_lt_0_1, attn_entropy, sink_ratio;
  std::optional<double> cross_attn_entropy;  // encoder–decoder runs: the last val line's
  std::optional<double> tokens_per_s;        // median over train lines (robust to the slow first step)
  std::optional<double> elapsed_s;
  std::optional<std::int64_t> parameters;  // from the config's model shape
  // Model FLOPs per token of a training step (forward + backward, models::GPT::flops_per_token) at
  // the config's block size.
  std::optional<double> flops_per_token;
  // KV-cached generation tokens/s on the latest checkpoint (generation.json, which `gattn ablate`
  // writes after training a cell: recipes/ablate/generation_speed.h); unset when not measured.
  std::optional<double> generation_tokens_per_s;
  // The last train line's gate_mean_by_head ([L][H], null rows for layers without per-head
  // values); null when the run logged none.
  nlohmann::json gate_mean_by_head;
};

// Reads dir/metrics.jsonl (required: a directory without it throws UsageError, exit 2),
// dir/config.yaml and dir/generation.json (both optional).
RunRecord read_run(const std::string& dir);

// The values of `key` on lines of `split` ("train"/"val") as (step, value); lines without it are
// skipped. `layer` >= 0 reads element `layer` of an array key (null elements skipped).
struct StepSeries {
  std::vector<double> step, value;
};
StepSeries metric_series(const RunRecord& run, const std::string& split, const std::string& key, int layer = -1);

// True when the run reached `max_steps`: a val line at that step (the final eval) and a
// checkpoints/latest file.
bool run_finished(const std::string& dir, std::int64_t max_steps);

struct MeanStd {
  double mean = 0, std = 0;  // std: sample standard deviation (n − 1); 0 for one value
  std::size_t n = 0;
};
MeanStd mean_std(const std::vector<double>& values);
// "1.2345 ± 0.0123" (n > 1), "1.2345" (n = 1), "–" (n = 0), with `decimals` digits after the point.
std::string format_mean_std(const MeanStd& m, int decimals);

}  // namespace gattn::recipes
