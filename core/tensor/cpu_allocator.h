// The CPU caching allocator behind Storage. Training allocates the same large activation and
// gradient buffers every step; handing each back to glibc returns it to the kernel (mmap/trim),
// so the next step pays page faults and page zeroing for all of them again (~10% of a step on the
// shakespeare_char model). Blocks of 64 KiB and more are instead rounded up to a size class and
// kept in per-class free lists for reuse, up to a cap on cached bytes; smaller blocks go straight
// to malloc, which already recycles them well. Thread-safe.
#pragma once
#include <cstddef>
#include <cstdint>

namespace gattn {

// 64-byte aligned, uninitialised. Never returns null (throws std::bad_alloc).
void* cpu_allocate(std::size_t bytes);
// `bytes` must be the size given to cpu_allocate for `ptr`.
void cpu_free(void* ptr, std::size_t bytes);

struct CpuAllocatorStats {
  std::int64_t cached_bytes = 0;  // held in the free lists now
  std::int64_t hits = 0;          // allocations served from the free lists
  std::int64_t misses = 0;        // cacheable allocations that went to the system
};
CpuAllocatorStats cpu_allocator_stats();
// Returns every cached block to the system.
void cpu_allocator_empty_cache();
// The most bytes the free lists may hold (default 2 GiB); blocks freed beyond it go to the system.
void set_cpu_allocator_cache_limit(std::int64_t bytes);

}  // namespace gattn
