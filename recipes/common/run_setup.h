// Turning a config into a validated run: data, model, device, threads, the run directory, and the
// optimizer's and the data's options read from the config.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "framework/data/dataset.h"
#include "framework/io/run_lock.h"
#include "framework/optim/adamw.h"
#include "models/gpt.h"
#include "ops/autocast.h"
#include "recipes/common/run_config.h"

namespace gattn::recipes {

struct RunSetup {
  Config config;  // fully resolved, model.vocab_size filled in from the data
  std::string dir;
  std::unique_ptr<Dataset> data;
  std::unique_ptr<models::GPT> model;
  std::unique_ptr<RunDirectoryLock> lock;                         // held from start_run_directory until the run ends
  Device device = Device::cpu;                                    // where the model trains (`device`, auto resolved)
  ops::ComputePrecision precision = ops::ComputePrecision::fp32;  // train.precision
};

// `device` resolved: auto is CUDA when this build has it and a GPU is visible, else the CPU; cuda
// without either is a ConfigError naming the key.
Device resolve_device(const Config& cfg);

// train.precision: fp32, or bf16 mixed precision (ops/autocast.h), which needs the model on CUDA;
// bf16 elsewhere is a ConfigError naming the key.
ops::ComputePrecision resolve_precision(const Config& cfg, Device device);

// train.threads applied to OpenMP and OpenBLAS: 0 is all cores, more than the cores is clamped to
// them (one line on stderr says so), and a count whose threads cannot be started (a memory or
// process limit) is a ConfigError naming the key instead of an OpenMP abort or a hang.
void apply_thread_setting(const Config& cfg);

// Loads and validates everything a run needs before anything is written: the config (ConfigError,
// exit 2), the data (DataError, exit 3), the model shape and that it fits in memory
// (recipes/common/memory_check.h), that run.dir is new, empty or a gattn run (check_run_directory, exit 2)
// and, unless `resuming`, that it does not already hold a run. Sets the CPU thread count.
RunSetup prepare_run(const std::string& config_path, const std::vector<std::string>& overrides, bool resuming = false);

// Creates the run directory (if needed), takes its lock (another process training into it is an
// error, exit 2) and writes config.yaml (the resolved config).
void start_run_directory(RunSetup& run);

optim::AdamWOptions adamw_options(const Config& cfg);
DataOptions data_options(const Config& cfg);

// An encoder–decoder trains on sequence-to-sequence data and a decoder on anything else: a
// ConfigError naming model.arch (exit 2) otherwise, before a forward would fail on the source.
void check_arch_fits_data(const Config& cfg, const Dataset& data);

}  // namespace gattn::recipes
