// Rewinding metrics.jsonl for a resume: the lines of steps after the checkpoint describe training
// that the resumed run redoes, so they go, and the resumed run appends its own in their place.
#pragma once
#include <cstdint>
#include <string>

namespace gattn {

// Keeps the lines of `path` whose "step" is <= `step` and drops the rest, including a torn last
// line that a killed run left half-written. Rewrites the file atomically (fsync + rename). A
// missing file is left missing. Returns the number of lines dropped. Throws CheckpointError.
std::int64_t rewind_metrics(const std::string& path, std::int64_t step);

}  // namespace gattn
