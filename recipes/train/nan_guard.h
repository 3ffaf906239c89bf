// The NaN guard of training: a step whose loss or gradient norm is not finite does not update
// (weights and optimizer moments stay as they were), the first non-finite tensor is named, and
// train.max_bad_steps such steps in a row end the run without writing anything.
#pragma once
#include <cstdint>
#include <string>

namespace gattn::recipes {

class NanGuard {
 public:
  // `bad_in_a_row`: the count a resumed run continues from.
  explicit NanGuard(std::int64_t max_bad_steps, std::int64_t bad_in_a_row = 0);

  // Records a step: true when it may update (loss and gradient norm finite), which resets the
  // count; false counts one more bad step in a row.
  bool step_ok(double loss, double grad_norm);
  std::int64_t bad_in_a_row() const { return bad_in_a_row_; }
  bool exhausted() const { return bad_in_a_row_ >= max_bad_steps_; }

  // What made a bad step bad: the loss when it is not finite, else the named gradient (or the
  // gradient norm when no single gradient is found).
  static std::string culprit(double loss, const std::string& first_non_finite_grad);
  // The line shown for a skipped step `done`.
  std::string skipped_message(std::int64_t done, const std::string& culprit) const;
  // The error that ends the run; `last_checkpoint` is "" when none was written.
  std::string failure_message(std::int64_t done, const std::string& culprit, const std::string& last_checkpoint) const;

 private:
  std::int64_t max_bad_steps_, bad_in_a_row_;
};

}  // namespace gattn::recipes
