// When a CPU loop is worth threading: OpenMP's fork/join costs a few microseconds, so loops below
// roughly 32k cheap element-operations stay on one thread.
#pragma once
#include <cstdint>

namespace gattn::cpu {

constexpr std::int64_t kParallelGrain = 1 << 15;

// True when `work` (elements × rough cost per element) pays for a parallel region.
inline bool worth_parallel(std::int64_t work) { return work >= kParallelGrain; }

}  // namespace gattn::cpu
