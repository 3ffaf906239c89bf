// What the recipes share: turning a config into a validated run (data, model, run directory),
// evaluation on the val split, checkpoint metadata, and text sampling for the end of a run.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "framework/config/config.h"
#include "framework/data/dataset.h"
#include "framework/optim/adamw.h"
#include "models/gpt.h"

namespace gattn::recipes {

struct RunSetup {
  Config config;  // fully resolved, model.vocab_size filled in from the data
  std::string dir;
  std::unique_ptr<Dataset> data;
  std::unique_ptr<models::GPT> model;
};

// Loads and validates everything a run needs before anything is written: the config (ConfigError,
// exit 2), the data (DataError, exit 3), the model shape, and that run.dir does not already hold a
// run. Sets the CPU thread count.
RunSetup prepare_run(const std::string& config_path, const std::vector<std::string>& overrides);

// Creates the run directory and writes config.yaml (the resolved config).
void start_run_directory(const RunSetup& run);

optim::AdamWOptions adamw_options(const Config& cfg);
DataOptions data_options(const Config& cfg);

struct EvalResult {
  double loss = 0;
  std::int64_t tokens = 0;  // predicted tokens the loss averages over
  std::optional<double> accuracy;  // synthetic tasks: answer-token accuracy
};

// Mean loss over the val split's eval windows (SPEC §5), in batches of `batch_size` windows.
EvalResult evaluate(models::GPT& model, const Dataset& data, const Config& cfg, std::int64_t batch_size);
std::string format_eval(std::int64_t step, const EvalResult& e);

// Writes checkpoints/step_<step>/ with the SPEC §3 metadata; returns its path.
std::string save_checkpoint(const RunSetup& run, std::int64_t step);

// `n` characters sampled from the model (temperature 0.8, seed from the config), starting from a
// newline when the vocabulary has one. Text data only ("" otherwise).
std::string sample_text(models::GPT& model, const Dataset& data, const Config& cfg, std::int64_t n);

}  // namespace gattn::recipes
