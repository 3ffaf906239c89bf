// The NaN guard's count and its messages.
#include "recipes/train/nan_guard.h"

#include <cmath>

namespace gattn::recipes {

NanGuard::NanGuard(std::int64_t max_bad_steps, std::int64_t bad_in_a_row)
    : max_bad_steps_(max_bad_steps), bad_in_a_row_(bad_in_a_row) {}

bool NanGuard::step_ok(double loss, double grad_norm) {
  if (std::isfinite(loss) && std::isfinite(grad_norm)) {
    bad_in_a_row_ = 0;
    return true;
  }
  ++bad_in_a_row_;
  return false;
}

std::string NanGuard::culprit(double loss, const std::string& first_non_finite_grad) {
  if (!std::isfinite(loss)) return "loss";
  return first_non_finite_grad.empty() ? "gradient norm" : "gradient of " + first_non_finite_grad;
}

std::string NanGuard::skipped_message(std::int64_t done, const std::string& culprit) const {
  return "step " + std::to_string(done) + ": non-finite " + culprit + ", update skipped (" +
         std::to_string(bad_in_a_row_) + "/" + std::to_string(max_bad_steps_) + ")";
}

std::string NanGuard::failure_message(std::int64_t done, const std::string& culprit,
                                      const std::string& last_checkpoint) const {
  std::string what = "train: non-finite ";
  what.append(culprit).append(" at step ").append(std::to_string(done)).append(", the ");
  what.append(std::to_string(bad_in_a_row_)).append(" bad step(s) in a row that train.max_bad_steps allows; ");
  what.append(last_checkpoint.empty() ? std::string("no checkpoint was written")
                                      : "the last checkpoint, " + last_checkpoint + ", is untouched");
  return what;
}

}  // namespace gattn::recipes
