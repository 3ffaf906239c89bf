// `gattn train --resume auto|DIR`: finding the checkpoint, checking that this config may continue
// it, and loading it into the run's model and optimizer.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "framework/io/optimizer_io.h"
#include "framework/io/train_state.h"
#include "framework/optim/adamw.h"
#include "recipes/common/run_setup.h"

namespace gattn::recipes {

struct Resumed {
  std::string dir;                          // the checkpoint directory
  std::string note;                         // a line to print about how it was found ("" when by `latest` or by name)
  TrainState state;                         // its state.json (step, generators, counters)
  std::vector<std::string> config_changes;  // "train.max_steps: 20 -> 40", keys allowed to change
};

// `resume` is "auto" (the checkpoint run.dir/checkpoints/latest names) or a checkpoint directory.
// Returns nullopt for "auto" when the run has no checkpoint directory yet (a fresh start). Without a
// `latest` but with step directories, "auto" takes the newest one that verifies and says so in
// `note` (none verifying is a CheckpointError naming them). Otherwise reads and
// verifies the checkpoint (every file, checksums, state.json), refuses it when the config hash or
// the vocabulary differs, loads the weights into run.model, hands the full optimizer state to
// `restore_optimizer` (which a ZeRO-1 rank cuts to its shard: a checkpoint of any world size
// resumes on any other), and returns its state. Throws CheckpointError (exit 3) naming the file and
// the tensor or field, and in particular never falls back to a fresh start when `latest` exists but
// is damaged.
std::optional<Resumed> resume_run(const std::string& resume, RunSetup& run,
                                  const std::function<void(const OptimizerSnapshot&)>& restore_optimizer);

// The shell command that continues a run started with `config` and `overrides`: this binary
// (/proc/self/exe), `train --config`, the overrides, `--resume auto`; words quoted where needed.
std::string resume_command(const std::string& config, const std::vector<std::string>& overrides);

}  // namespace gattn::recipes
