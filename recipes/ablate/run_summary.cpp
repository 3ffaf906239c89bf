// Reading run directories back for ablation summaries and reports.
#include "recipes/ablate/run_summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "framework/io/metrics.h"
#include "models/gpt.h"
#include "recipes/ablate/ablation.h"
#include "recipes/ablate/generation_speed.h"
#include "recipes/common/run_config.h"

namespace gattn::recipes {

namespace fs = std::filesystem;

namespace {

std::optional<double> number(const nlohmann::json& line, const std::string& key) {
  auto it = line.find(key);
  if (it == line.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

// Parameters and training FLOPs per token of the model the config describes (building it is cheap
// next to training it).
void read_model_size(const std::string& config_path, RunRecord& run) {
  try {
    const Config cfg = Config::load(config_path);
    models::ModelConfig mc = cfg.model_config();
    run.model = mc;
    if (mc.vocab_size <= 0) return;
    models::GPT model(mc, 0);
    run.parameters = model.num_parameters();
    run.flops_per_token = model.flops_per_token(mc.block_size);
  } catch (const std::exception&) {
    // an unreadable config only costs the columns
  }
}

}  // namespace

RunRecord read_run(const std::string& dir) {
  RunRecord run;
  run.dir = dir;
  run.name = fs::path(dir).lexically_normal().filename().string();
  if (run.name.empty() || run.name == ".")
    run.name = fs::path(dir).lexically_normal().parent_path().filename().string();
  const fs::path metrics = fs::path(dir) / "metrics.jsonl";
  if (!fs::is_regular_file(metrics))
    throw UsageError(dir +
                     " is not a run directory: it has no metrics.jsonl (give directories that gattn train wrote)");
  run.metrics = read_metrics(metrics.string());
  const fs::path config = fs::path(dir) / "config.yaml";
  if (fs::is_regular_file(config)) {
    try {
      run.config = Config::load(config.string()).to_json();
    } catch (const std::exception&) {
      run.config = nullptr;
    }
    read_model_size(config.string(), run);
  }
  run.generation_tokens_per_s = read_generation_tokens_per_s(dir);
  std::vector<double> speeds;
  for (const nlohmann::json& line : run.metrics) {
    const std::string split = line.value("split", "");
    if (auto s = number(line, "step")) run.last_step = std::max(run.last_step, static_cast<std::int64_t>(*s));
    if (split == "val") {
      run.val_loss = number(line, "loss");
      run.val_accuracy = number(line, "accuracy");
      run.cross_attn_entropy = number(line, "cross_attn_entropy");
    } else if (split == "train") {
      run.gate_mean = number(line, "gate_mean");
      run.gate_frac_lt_0_1 = number(line, "gate_frac_lt_0.1");
      run.attn_entropy = number(line, "attn_entropy");
      run.sink_ratio = number(line, "sink_ratio");
      run.elapsed_s = number(line, "elapsed_s");
      auto by_head = line.find("gate_mean_by_head");
      run.gate_mean_by_head = by_head != line.end() && by_head->is_array() ? *by_head : nlohmann::json();
      if (auto v = number(line, "tokens_per_s")) speeds.push_back(*v);
    }
  }
  if (!speeds.empty()) {
    std::sort(speeds.begin(), speeds.end());
    const std::size_t n = speeds.size();
    run.tokens_per_s = n % 2 ? speeds[n / 2] : (speeds[n / 2 - 1] + speeds[n / 2]) / 2;
  }
  return run;
}

StepSeries metric_series(const RunRecord& run, const std::string& split, const std::string& key, int layer) {
  StepSeries out;
  for (const nlohmann::json& line : run.metrics) {
    if (line.value("split", "") != split) continue;
    auto it = line.find(key);
    auto step = line.find("step");
    if (it == line.end() || step == line.end() || !step->is_number()) continue;
    const nlohmann::json* v = &*it;
    if (layer >= 0) {
      if (!it->is_array() || static_cast<std::size_t>(layer) >= it->size()) continue;
      v = &(*it)[static_cast<std::size_t>(layer)];
    }
    if (!v->is_number()) continue;
    out.step.push_back(step->get<double>());
    out.value.push_back(v->get<double>());
  }
  return out;
}

bool run_finished(const std::string& dir, std::int64_t max_steps) {
  const fs::path metrics = fs::path(dir) / "metrics.jsonl";
  if (!fs::is_regular_file(metrics) || !fs::is_regular_file(fs::path(dir) / "checkpoints" / "latest")) return false;
  try {
    for (const nlohmann::json& line : read_metrics(metrics.string()))
      if (line.value("split", "") == "val" && line.value("step", std::int64_t{-1}) == max_steps) return true;
  } catch (const std::exception&) {
    return false;  // a damaged file: the cell is not finished, and resuming it will say why
  }
  return false;
}

MeanStd mean_std(const std::vector<double>& values) {
  MeanStd m;
  m.n = values.size();
  if (values.empty()) return m;
  double sum = 0;
  for (double v : values) sum += v;
  m.mean = sum / static_cast<double>(m.n);
  if (m.n > 1) {
    double sq = 0;
    for (double v : values) sq += (v - m.mean) * (v - m.mean);
    m.std = std::sqrt(sq / static_cast<double>(m.n - 1));
  }
  return m;
}

std::string format_mean_std(const MeanStd& m, int decimals) {
  if (m.n == 0) return "–";
  char buf[96];
  if (m.n == 1)
    std::snprintf(buf, sizeof buf, "%.*f", decimals, m.mean);
  else
    std::snprintf(buf, sizeof buf, "%.*f ± %.*f", decimals, m.mean, decimals, m.std);
  return buf;
}

}  // namespace gattn::recipes
