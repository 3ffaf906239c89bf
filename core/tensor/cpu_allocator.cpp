// Size-class free lists over aligned_alloc (see cpu_allocator.h for why).
#include "core/tensor/cpu_allocator.h"

#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

namespace gattn {

namespace {

constexpr std::size_t kAlignment = 64;
constexpr std::size_t kCacheableBytes = 64 * 1024;

// Rounds a cacheable size up to one of 8 classes per power of two (at most 12.5% slack), so
// buffers of nearly equal size share a class.
std::size_t size_class(std::size_t bytes) {
  std::size_t top = 1;
  while ((top << 1) <= bytes) top <<= 1;  // the highest power of two <= bytes
  const std::size_t step = top / 8;
  return (bytes + step - 1) / step * step;
}

std::size_t rounded_size(std::size_t bytes) {
  const std::size_t aligned = bytes == 0 ? kAlignment : (bytes + kAlignment - 1) / kAlignment * kAlignment;
  return aligned >= kCacheableBytes ? size_class(aligned) : aligned;
}

struct Cache {
  std::mutex mutex;
  std::unordered_map<std::size_t, std::vector<void*>> free_blocks;  // by rounded size
  CpuAllocatorStats stats;
  std::int64_t limit = std::int64_t{2} << 30;
};

Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: tensors may outlive static destructors
  return *c;
}

}  // namespace

void* cpu_allocate(std::size_t bytes) {
  const std::size_t size = rounded_size(bytes);
  if (size >= kCacheableBytes) {
    Cache& c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    auto it = c.free_blocks.find(size);
    if (it != c.free_blocks.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      c.stats.cached_bytes -= static_cast<std::int64_t>(size);
      ++c.stats.hits;
      return p;
    }
    ++c.stats.misses;
  }
  void* p = std::aligned_alloc(kAlignment, size);
  if (!p) {
    // Cached blocks of other sizes may be what stands between us and success.
    cpu_allocator_empty_cache();
    p = std::aligned_alloc(kAlignment, size);
    if (!p) throw std::bad_alloc();
  }
  return p;
}

void cpu_free(void* ptr, std::size_t bytes) {
  if (!ptr) return;
  const std::size_t size = rounded_size(bytes);
  if (size >= kCacheableBytes) {
    Cache& c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    if (c.stats.cached_bytes + static_cast<std::int64_t>(size) <= c.limit) {
      c.free_blocks[size].push_back(ptr);
      c.stats.cached_bytes += static_cast<std::int64_t>(size);
      return;
    }
  }
  std::free(ptr);
}

CpuAllocatorStats cpu_allocator_stats() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.stats;
}

void cpu_allocator_empty_cache() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  for (auto& [size, blocks] : c.free_blocks)
    for (void* p : blocks) std::free(p);
  c.free_blocks.clear();
  c.stats.cached_bytes = 0;
}

void set_cpu_allocator_cache_limit(std::int64_t bytes) {
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    c.limit = bytes < 0 ? 0 : bytes;
    if (c.stats.cached_bytes <= c.limit) return;
  }
  cpu_allocator_empty_cache();
}

}  // namespace gattn
