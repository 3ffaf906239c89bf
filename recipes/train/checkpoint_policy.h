// When training writes a checkpoint.
#pragma once
#include <cstdint>

namespace gattn::recipes {

struct CheckpointPolicy {
  std::int64_t every = 0;  // checkpoint.every (0 = only the final one)

  // After optimizer step `done`: every `every` steps, except while steps are being skipped (the
  // newest checkpoint stays the last good state, and keep_last cannot push it out), and always after
  // the last step (a skipped step leaves weights and moments as the last good step did).
  bool due(std::int64_t done, bool last, std::int64_t bad_in_a_row) const {
    return (every > 0 && done % every == 0 && bad_in_a_row == 0) || last;
  }
};

}  // namespace gattn::recipes
