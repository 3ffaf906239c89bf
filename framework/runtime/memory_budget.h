// How much memory this process can count on, so that a setting that cannot fit (block_size 1e9,
// n_embd 2e6, a trillion sampled tokens) is refused up front, by name, instead of ending in
// std::bad_alloc or the OOM killer halfway through start-up.
#pragma once
#include <cstdint>
#include <string>

namespace gattn {

struct MemoryBudget {
  double bytes = 0;    // the smallest of the limits below that is set
  std::string source;  // which limit that is: "physical memory", "ulimit -v", "cgroup memory.max"
};

// The machine's physical memory, the address-space limit (ulimit -v) and the cgroup's memory
// limit, whichever is smallest.
MemoryBudget memory_budget();

// "" when `bytes` fits the budget; else why not, e.g. "needs about 512.0 GiB (the weights), more
// than the 7.6 GiB this process may use (physical memory)". `what` says what the bytes are for.
std::string memory_shortfall(double bytes, const std::string& what);

// "1.5 GiB", "12.0 MiB", "2.0 PiB": one decimal, binary units.
std::string format_bytes(double bytes);

}  // namespace gattn
