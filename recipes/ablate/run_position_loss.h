// The loss by position of a run's latest checkpoint for `gattn report` (the "Loss by position"
// chart): its val windows evaluated at one context, the loss in log-spaced position buckets
// (recipes/common/position_loss.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "recipes/common/checkpoint_model.h"
#include "recipes/common/position_loss.h"

namespace gattn::recipes {

struct RunPositionLoss {
  std::string note;                     // why there is no curve, or why it stops short ("" otherwise)
  std::int64_t context = 0;             // the window length evaluated at
  std::vector<PositionBucket> buckets;  // empty when there is no curve
};

// The val windows (at most the loaded config's eval.max_windows) of `context` tokens (0: the run's
// block size). A rope or position-free model is rebuilt in `ckpt` for a longer context (so run it
// after anything that needs the model as trained). A learned-position run asked for more than its
// block is evaluated at its block, with a note; an encoder–decoder, or a run whose data cannot be
// read, gets a note instead of failing the report.
RunPositionLoss run_position_loss(CheckpointModel& ckpt, std::int64_t context);

}  // namespace gattn::recipes
