// Learning-rate schedules: the formulas documented in schedule.h.
#include "framework/optim/schedule.h"

#include <cmath>
#include <numbers>

#include "core/tensor/error.h"

namespace gattn::optim {

void validate(const ScheduleConfig& c) {
  if (c.kind != "constant" && c.kind != "cosine")
    throw ValueError("optim.schedule.kind: '" + c.kind + "' is not one of constant, cosine");
  if (!(c.lr >= 0.0) || !std::isfinite(c.lr))
    throw ValueError("optim.lr: must be a finite number >= 0, got " + std::to_string(c.lr));
  if (c.warmup_steps < 0)
    throw ValueError("optim.schedule.warmup_steps: must be >= 0, got " + std::to_string(c.warmup_steps));
  if (c.kind == "cosine") {
    if (!(c.min_lr >= 0.0) || !std::isfinite(c.min_lr))
      throw ValueError("optim.schedule.min_lr: must be a finite number >= 0, got " + std::to_string(c.min_lr));
    if (c.max_steps <= 0)
      throw ValueError("optim.schedule.max_steps: a cosine schedule needs max_steps > 0, got " +
                       std::to_string(c.max_steps));
  }
}

double scheduled_lr(const ScheduleConfig& c, std::int64_t step) {
  const bool cosine = c.kind == "cosine";
  if (!cosine && c.kind != "constant")
    throw ValueError("optim.schedule.kind: '" + c.kind + "' is not one of constant, cosine");
  if (step < c.warmup_steps) return c.lr * static_cast<double>(step + 1) / static_cast<double>(c.warmup_steps);
  if (!cosine) return c.lr;
  if (step >= c.max_steps) return c.min_lr;
  const double r = static_cast<double>(step - c.warmup_steps) / static_cast<double>(c.max_steps - c.warmup_steps);
  return c.min_lr + 0.5 * (1.0 + std::cos(std::numbers::pi * r)) * (c.lr - c.min_lr);
}

}  // namespace gattn::optim
