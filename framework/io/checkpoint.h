// Checkpoint directories (docs/run-directory.md): checkpoints/step_<8 digits>/ holding model.safetensors,
// optimizer.safetensors and state.json, each fsynced, written into a temporary directory and
// renamed into place only when complete, then checkpoints/latest updated atomically; retention
// (keep_last / keep_every) deletes older directories only after that. Reading verifies every file
// (structure, checksums, state fields) before anything is loaded into a model.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "framework/io/optimizer_io.h"
#include "framework/io/safetensors.h"
#include "framework/io/train_state.h"
#include "framework/nn/module.h"
#include "framework/optim/adamw.h"

namespace gattn {

inline constexpr const char* kModelFile = "model.safetensors";
inline constexpr const char* kOptimizerFile = "optimizer.safetensors";
inline constexpr const char* kStateFile = "state.json";

// "step_00000600"
std::string checkpoint_name(std::int64_t step);
// The step of a checkpoint directory name "step_<8+ digits>", or -1 for anything else (temporaries,
// `latest`).
std::int64_t checkpoint_step_of(const std::string& name);

struct CheckpointWritten {
  std::string dir;          // the checkpoint directory
  std::uint64_t bytes = 0;  // size of its files
  double seconds = 0;       // wall time of the whole write, fsyncs and `latest` included
};

// Writes run_dir/checkpoints/step_<state.step>/: model.safetensors (`metadata` plus format and checksums),
// optimizer.safetensors and state.json, and points run_dir/checkpoints/latest at it. A crash at
// any moment leaves the previous checkpoint and `latest` valid; a directory of the same step from
// an earlier attempt is replaced whole. Throws CheckpointError, or NumericalError naming the tensor
// (before anything is written) when a weight or moment holds NaN or Inf.
CheckpointWritten write_checkpoint(const std::string& run_dir, nn::Module& model, const optim::AdamW& optimizer,
                                   const std::map<std::string, std::string>& metadata, const TrainState& state);

// write_checkpoint in two halves, for a multi-rank run whose ranks must all agree that the
// checkpoint is complete before `latest` moves: the step directory, complete and renamed into
// place (the optimizer as a snapshot, e.g. ZeRO-1 shards gathered), and then `latest`.
CheckpointWritten write_checkpoint_directory(const std::string& run_dir, nn::Module& model,
                                             const OptimizerSnapshot& optimizer,
                                             const std::map<std::string, std::string>& metadata,
                                             const TrainState& state);
void publish_checkpoint(const std::string& run_dir, std::int64_t step);

// Retention, run after a complete write of step `newest_step`: among the step directories before
// it, keeps the newest keep_last − 1 (keep_last counts the new one; 0 keeps all) and every step
// that is a multiple of keep_every (> 0). Directories after newest_step (from an attempt this run
// rewound past) are left alone: the run overwrites them when it gets there. Also removes the
// temporaries of an earlier attempt killed mid-write. Returns the checkpoint names removed. Throws
// CheckpointError when a checkpoint directory cannot be removed.
std::vector<std::string> prune_checkpoints(const std::string& run_dir, std::int64_t newest_step, std::int64_t keep_last,
                                           std::int64_t keep_every);

// The checkpoint directory run_dir/checkpoints/latest names, or "" when there is no `latest` file
// (a run that never completed a checkpoint, or one whose `latest` was lost: see
// checkpoint_directories). A `latest` that cannot be read, holds anything but one checkpoint name
// (and a newline), or names a missing directory throws CheckpointError: a resume must never
// silently start over.
std::string latest_checkpoint(const std::string& run_dir);

// The step directories under run_dir/checkpoints (step_<8+ digits>), newest first, complete or
// not: temporaries of a write in progress are not listed. Empty when there is no checkpoints/.
std::vector<std::string> checkpoint_directories(const std::string& run_dir);

// A checkpoint read back and verified, not yet loaded into anything.
struct CheckpointFiles {
  std::string dir;
  TrainState state;
  SafetensorsFile model;
  SafetensorsFile optimizer;
};

// Reads and verifies the three files of `dir`: state.json's fields and CRC, both safetensors files'
// structure, format, per-tensor checksums (required), vocab and finite values
// (verify_checkpoint_file). Throws CheckpointError naming the file (and the tensor or field).
CheckpointFiles read_checkpoint(const std::string& dir);

// Writes `text` to `path` through a temporary file, fsync and rename (never a half-written file).
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace gattn
