// A training run's checkpoints: writing one with the run's metadata, then publishing it as
// `latest` and pruning the old ones.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "framework/io/checkpoint.h"
#include "framework/io/train_state.h"
#include "recipes/common/run_setup.h"

namespace gattn::recipes {

// Writes checkpoints/step_<state.step>/ (not yet `latest`): the weights with the metadata docs/checkpoint-format.md
// lists,
// the optimizer state, and `state` with the resolved config, its hash and the groups' learning
// rates `lrs` (of the last step done) filled in.
CheckpointWritten save_checkpoint_directory(const RunSetup& run, const OptimizerSnapshot& optimizer,
                                            const std::vector<std::pair<std::string, double>>& lrs, TrainState state);
// Points `latest` at step `step`'s checkpoint, then drops old checkpoints as checkpoint.keep_last /
// keep_every say. A multi-rank run calls it once every rank agreed that the checkpoint is complete.
void publish_checkpoint(const RunSetup& run, std::int64_t step);

}  // namespace gattn::recipes
