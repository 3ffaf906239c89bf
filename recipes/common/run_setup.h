// What the recipes share: turning a config into a validated run (data, model, run directory),
// evaluation on the val split, checkpoint metadata, and text sampling for the end of a run.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "framework/data/dataset.h"
#include "framework/dist/communicator.h"
#include "framework/io/checkpoint.h"
#include "framework/io/run_lock.h"
#include "framework/io/train_state.h"
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

struct EvalResult {
  double loss = 0;
  std::int64_t tokens = 0;  // predicted tokens the loss averages over
  // Synthetic tasks: answer-token accuracy. Sequence-to-sequence data (Dataset::seq2seq): exact
  // match, the fraction of the `sequences` whose every target token the argmax predicts.
  std::optional<double> accuracy;
  bool seq2seq = false;
  std::int64_t sequences = 0;  // seq2seq: the sequences (rows with a target) exact match counts
  // Data with text behind its ids (char-level text, shards with a tokenizer): the loss in bits per
  // byte of the predicted text, log2(e) · Σ loss / Σ bytes of the targets, which compares models
  // across vocabularies (a char-level and a subword model of the same text).
  std::optional<double> bits_per_byte;
  // Models with gates: the per-layer statistics of every eval forward, summed over all windows (eval
  // mode: no gate noise); empty for a model without gates.
  std::vector<models::LayerStats> stats;
  // Encoder–decoder models: the cross-attention's statistics per decoder block and the encoder's per
  // block, summed like `stats`, and the mean over those layers of their attention entropy (nats).
  std::vector<models::LayerStats> cross_stats, encoder_stats;
  std::optional<double> cross_attn_entropy, encoder_attn_entropy;
};

// Mean loss over the val split's eval windows (docs/config.md), in batches of `batch_size` windows, and
// for a model with gates the gate and attention statistics of those forwards. With a communicator of
// several ranks the batches are dealt round-robin and the sums reduced: every rank gets the same
// result, each having run 1/world of the windows.
EvalResult evaluate(models::GPT& model, const Dataset& data, const Config& cfg, std::int64_t batch_size,
                    dist::Communicator* comm = nullptr);
// "eval at step N: val loss …" with the answer accuracy (synthetic tasks) or exact match (seq2seq),
// the val gate mean and std (models with gates) and the cross-attention entropy (encoder–decoders).
std::string format_eval(std::int64_t step, const EvalResult& e);
// The fields an eval adds to a val line of metrics.jsonl and to `gattn eval`'s line: loss, accuracy
// (synthetic tasks: answer accuracy; seq2seq: exact match), bits_per_byte (text), the val gate
// statistics (models::add_val_gate_stats) and, for an encoder–decoder, cross_attn_entropy and
// encoder_attn_entropy.
void add_eval_fields(nlohmann::json& line, const EvalResult& e);

// An encoder–decoder trains on sequence-to-sequence data and a decoder on anything else: a
// ConfigError naming model.arch (exit 2) otherwise, before a forward would fail on the source.
void check_arch_fits_data(const Config& cfg, const Dataset& data);

// Writes checkpoints/step_<state.step>/ (not yet `latest`): the weights with the metadata docs/checkpoint-format.md
// lists,
// the optimizer state, and `state` with the resolved config, its hash and the groups' learning
// rates `lrs` (of the last step done) filled in.
CheckpointWritten save_checkpoint_directory(const RunSetup& run, const OptimizerSnapshot& optimizer,
                                            const std::vector<std::pair<std::string, double>>& lrs, TrainState state);
// Points `latest` at step `step`'s checkpoint, then drops old checkpoints as checkpoint.keep_last /
// keep_every say. A multi-rank run calls it once every rank agreed that the checkpoint is complete.
void publish_checkpoint(const RunSetup& run, std::int64_t step);

// `n` characters sampled from the model with the KV cache (temperature 0.8, seed from the config),
// starting from a newline when the vocabulary has one. Text data only ("" otherwise).
std::string sample_text(models::GPT& model, const Dataset& data, const Config& cfg, std::int64_t n);

// Encoder–decoder models: the first validation source decoded greedily (models::generate_target),
// as "SOURCE → OUTPUT (expected TARGET)": text where the data has a codec, else space-separated ids.
std::string sample_target(models::GPT& model, const Dataset& data);

}  // namespace gattn::recipes
