// Run preparation shared by the recipes: config, data, model, device, threads, run directory.
#include "recipes/common/run_setup.h"

#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "core/cuda/device.h"
#include "framework/config/errors.h"
#include "framework/dist/launch_env.h"
#include "framework/io/checkpoint.h"
#include "framework/io/checkpoint_text.h"
#include "framework/io/errors.h"
#include "framework/io/run_files.h"
#include "framework/runtime/threads.h"
#include "ops/cuda/runtime_info.h"
#include "recipes/common/init_from.h"
#include "recipes/common/memory_check.h"

namespace gattn::recipes {

namespace fs = std::filesystem;

DataOptions data_options(const Config& cfg) {
  DataOptions o;
  o.kind = cfg.get_string("data.kind");
  o.path = cfg.get_string("data.path");
  o.task = cfg.get_string("data.task");
  o.tokenizer = cfg.get_string("data.tokenizer");
  // data.vocab_size sizes a synthetic task; token shards (GPT-2's 50,257 ids) are checked against
  // the vocabulary of the model that reads them.
  o.vocab_size = o.kind == "tokens" ? cfg.get_int("model.vocab_size") : cfg.get_int("data.vocab_size");
  o.n_pairs = cfg.get_int("data.n_pairs");
  o.n_distractors = cfg.get_int("data.n_distractors");
  o.seed = static_cast<std::uint64_t>(cfg.get_int("seed"));
  return o;
}

optim::AdamWOptions adamw_options(const Config& cfg) {
  optim::AdamWOptions o;
  o.lr = cfg.get_double("optim.lr");
  std::vector<double> betas = cfg.get_double_list("optim.betas");
  o.beta1 = betas.at(0);
  o.beta2 = betas.at(1);
  o.eps = cfg.get_double("optim.eps");
  o.weight_decay = cfg.get_double("optim.weight_decay");
  o.grad_clip = cfg.get_double("optim.grad_clip");
  o.schedule.kind = cfg.get_string("optim.schedule");
  o.schedule.lr = o.lr;
  o.schedule.warmup_steps = cfg.get_int("optim.warmup_steps");
  o.schedule.min_lr = cfg.get_double("optim.min_lr");
  o.schedule.max_steps = cfg.get_int("train.max_steps");
  o.groups = cfg.param_groups();
  return o;
}

Device resolve_device(const Config& cfg) {
  const std::string device = cfg.get_string("device");
  const bool gpu = cuda::compiled_in() && cuda::available();
  if (device == "cuda" && !gpu) {
    std::string why = cuda::compiled_in() ? "no CUDA device is visible" : "this build has no CUDA (nvcc was not found)";
    throw ConfigError(cfg.where("device") + ": device 'cuda': " + why + "; use cpu or auto");
  }
  if (device == "cuda" || (device == "auto" && gpu)) {
    // A launched rank drives the GPU of its local rank (ranks beyond the node's GPUs share them
    // round-robin, which only the staged MPI backend allows), chosen before any CUDA work.
    const dist::LaunchInfo launch = dist::detect_launch();
    if (launch.launched) cuda::use_device(launch.local_rank % cuda::device_count());
    return Device::cuda;
  }
  return Device::cpu;
}

ops::ComputePrecision resolve_precision(const Config& cfg, Device device) {
  const std::string precision = cfg.get_string("train.precision");
  if (precision == "fp32") return ops::ComputePrecision::fp32;
  // bf16 is mixed precision on tensor cores; the CPU kernels compute in f32/f64 only, and training
  // silently in fp32 under a bf16 config would mislabel every number the run reports.
  if (device != Device::cuda)
    throw ConfigError(cfg.where("train.precision") +
                      ": train.precision 'bf16' needs device cuda (the CPU kernels compute "
                      "in f32); use fp32 on the CPU");
  return ops::ComputePrecision::bf16;
}

void apply_thread_setting(const Config& cfg) {
  const std::int64_t requested = cfg.get_int("train.threads");
  const ThreadCount count = resolve_thread_count(requested);
  if (count.clamped)
    std::cerr << "gattn: train.threads " << requested << " is more than the " << count.threads
              << " cores this process may use; using " << count.threads << "\n";
  const std::string why = probe_thread_start(count.threads);
  if (!why.empty())
    throw ConfigError(cfg.where("train.threads") + ": train.threads " + std::to_string(requested) + ": " + why +
                      " (a memory or process limit?); set train.threads lower");
  set_num_threads(count.threads);
}

RunSetup prepare_run(const std::string& config_path, const std::vector<std::string>& user_overrides, bool resuming) {
  Config cfg = Config::load(config_path, user_overrides);
  // train.init_from: the checkpoint's model settings first, so the config names only what it changes.
  std::vector<std::string> overrides = init_from_overrides(cfg);
  if (!overrides.empty()) {
    overrides.insert(overrides.end(), user_overrides.begin(), user_overrides.end());
    cfg = Config::load(config_path, overrides);
  } else {
    overrides = user_overrides;
  }
  const Device device = resolve_device(cfg);
  const ops::ComputePrecision precision = resolve_precision(cfg, device);
  apply_thread_setting(cfg);
  check_model_memory(cfg, ModelUse::train, device);  // before the data: a synthetic task sizes itself by the block

  RunSetup run{std::move(cfg), "", nullptr, nullptr, nullptr, device, precision};
  models::ModelConfig mc = run.config.model_config();
  run.data = make_dataset(data_options(run.config), mc.block_size);
  check_arch_fits_data(run.config, *run.data);
  check_init_from_vocabulary(run.config, *run.data);
  const std::int64_t data_vocab = run.data->vocab_size();
  if (mc.vocab_size == 0) {
    mc.vocab_size = data_vocab;
    // Record the vocabulary the run really uses in the resolved config: the same file and overrides
    // plus one more, so every other key still names the line (or override) that set it.
    std::vector<std::string> with_vocab = overrides;
    with_vocab.push_back("model.vocab_size=" + std::to_string(data_vocab));
    run.config = Config::load(config_path, with_vocab);
  } else if (mc.vocab_size < data_vocab) {
    throw ConfigError(run.config.where("model.vocab_size") + ": model.vocab_size " + std::to_string(mc.vocab_size) +
                      " is smaller than the data's vocabulary (" + std::to_string(data_vocab) + " tokens)");
  }
  mc.validate();
  check_model_memory(run.config, ModelUse::train, device);  // again, with the data's vocabulary
  run.model = std::make_unique<models::GPT>(mc, static_cast<std::uint64_t>(run.config.get_int("seed")));

  run.dir = run.config.run_dir();
  check_run_directory(run.dir, "run.dir");  // new, empty or a gattn run: never a folder of other files
  if (!resuming && (fs::exists(fs::path(run.dir) / "metrics.jsonl") || fs::exists(fs::path(run.dir) / "checkpoints")))
    throw ConfigError("run.dir: " + run.dir +
                      " already holds a run; continue it with --resume auto, or choose another run.name or run.dir");
  return run;
}

void start_run_directory(RunSetup& run) {
  std::error_code ec;
  fs::create_directories(run.dir, ec);
  if (ec) throw CheckpointError("cannot create the run directory " + run.dir + ": " + ec.message());
  run.lock = std::make_unique<RunDirectoryLock>(run.dir);
  write_file_atomically((fs::path(run.dir) / "config.yaml").string(), run.config.to_yaml());
  // The tokenizer of token shards beside the config, so the run directory says how to read its
  // tokens (its checkpoints carry it too): tokenizer.model, or a Hugging Face tokenizer's files.
  if (auto tokenizer = run.data->tokenizer())
    for (const auto& [name, bytes] : tokenizer->files())
      write_file_atomically((fs::path(run.dir) / name).string(), bytes);
}

void check_arch_fits_data(const Config& cfg, const Dataset& data) {
  const bool encoder_decoder = cfg.get_string("model.arch") == models::kArchEncoderDecoder;
  if (encoder_decoder == data.seq2seq()) return;
  const std::string kind = cfg.get_string("data.kind");
  const std::string what = kind == "synthetic" ? "data.task " + cfg.get_string("data.task") : "data.kind " + kind;
  if (encoder_decoder)
    throw ConfigError(cfg.where("model.arch") +
                      ": model.arch encoder_decoder needs sequence-to-sequence data (data.kind pairs, or data.task "
                      "reverse, sort or noisy_copy), got " +
                      what);
  throw ConfigError(cfg.where("model.arch") + ": " + what +
                    " is sequence-to-sequence data (a source and a target): it needs model.arch encoder_decoder");
}

}  // namespace gattn::recipes
