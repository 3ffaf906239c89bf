// What `gattn ablate` and `gattn report` read back from a run directory (docs/run-directory.md): the metrics
// lines, the final numbers of a run (val loss and accuracy, gate and attention statistics, speed,
// size), and mean ± std over seeds.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace gattn::recipes {

struct RunRecord {
  std::string dir;
  std::string name;  // the directory's last component
  std::vector<nlohmann::json> metrics;
  nlohmann::json config;  // the resolved config (config.yaml) as JSON; null when the run has none
  std::int64_t last_step = 0;
  // Final values: the last val line, and the last train line's statistics. Unset when not logged
  // (e.g. gates of kind none, accuracy of text data).
  std::optional<double> val_loss, val_accuracy, gate_mean, gate_frac_lt_0_1, attn_entropy, sink_ratio;
  std::optional<double> tokens_per_s;  // median over train lines (robust to the slow first step)
  std::optional<double> elapsed_s;
  std::optional<std::int64_t> parameters;  // from the config's model shape
};

// Reads dir/metrics.jsonl (required: a directory without it throws UsageError, exit 2) and
// dir/config.yaml (optional).
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
