// Learning-rate schedules (docs/config.md, `optim.schedule`): constant or cosine, both with linear warm-up.
#pragma once
#include <cstdint>
#include <string>

namespace gattn::optim {

struct ScheduleConfig {
  std::string kind = "cosine";  // constant | cosine
  double lr = 0.0;              // peak learning rate (the top-level `optim.lr`)
  std::int64_t warmup_steps = 0;
  double min_lr = 0.0;         // cosine: the rate reached at max_steps and held afterwards
  std::int64_t max_steps = 0;  // cosine: the step at which the decay ends (usually train.max_steps)
};

// Throws ValueError naming the key (`optim.schedule.kind`, `optim.schedule.warmup_steps`, ...)
// for an unknown kind, a negative rate or step count, or a cosine without max_steps > 0.
void validate(const ScheduleConfig& c);

// The learning rate for optimizer step `step` (0-based), the shape of nanoGPT's get_lr:
//   warm-up (both kinds), step < W:      lr · (step + 1) / W        (reaches lr at step W − 1)
//   constant, step >= W:                 lr
//   cosine, W <= step < max_steps:       min_lr + ½ (1 + cos(π r)) (lr − min_lr),
//                                        r = (step − W) / (max_steps − W)
//   cosine, step >= max_steps:           min_lr
// with W = warmup_steps. A cosine whose max_steps <= W goes straight to min_lr after warm-up.
// Throws ValueError for an unknown kind.
double scheduled_lr(const ScheduleConfig& c, std::int64_t step);

}  // namespace gattn::optim
