// The caching allocator's policy (see caching_allocator.h); no CUDA calls here.
#include "core/cuda/caching_allocator.h"

#include <algorithm>
#include <string>

#include "core/cuda/error.h"
#include "core/tensor/error.h"

namespace gattn::cuda {

namespace {
constexpr std::size_t kGranule = 512;
constexpr std::size_t kClassedFrom = 64 * 1024;
}  // namespace

std::size_t CachingAllocator::bin_size(std::size_t bytes) {
  const std::size_t granular = bytes == 0 ? kGranule : (bytes + kGranule - 1) / kGranule * kGranule;
  if (granular < kClassedFrom) return granular;
  std::size_t top = kClassedFrom;
  while ((top << 1) <= granular) top <<= 1;  // the highest power of two <= granular
  const std::size_t step = top / 8;          // a multiple of kGranule since top >= 64 KiB
  return (granular + step - 1) / step * step;
}

CachingAllocator::~CachingAllocator() {
  std::lock_guard<std::mutex> lock(mutex_);
  try {
    release_cached_locked();
  } catch (...) {
    // A destructor must not throw; a failing cudaFree at teardown means the context is gone anyway.
  }
}

void* CachingAllocator::allocate(std::size_t bytes, StreamKey stream) {
  const std::size_t size = bin_size(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  void* ptr = nullptr;
  auto it = free_lists_.find({stream, size});
  if (it != free_lists_.end() && !it->second.empty()) {
    ptr = it->second.back();
    it->second.pop_back();
    stats_.cached_bytes -= static_cast<std::int64_t>(size);
    ++stats_.cache_hits;
  } else {
    ptr = backend_.allocate(size);
    if (!ptr) {
      // Blocks cached for other bins or streams may be what stands between us and success.
      release_cached_locked();
      ptr = backend_.allocate(size);
    }
    if (!ptr) {
      std::string msg = "CUDA out of memory: cannot allocate ";
      msg.append(std::to_string(size))
          .append(" bytes (")
          .append(std::to_string(stats_.allocated_bytes))
          .append(" bytes already allocated by tensors, the cache already emptied)");
      throw CudaOutOfMemory(std::move(msg), "CUDA", 2 /* cudaErrorMemoryAllocation */, "cudaMalloc");
    }
    ++stats_.backend_allocations;
  }
  live_.emplace(ptr, Block{size, stream});
  stats_.allocated_bytes += static_cast<std::int64_t>(size);
  stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
  return ptr;
}

void CachingAllocator::free(void* ptr) {
  if (!ptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(ptr);
  if (it == live_.end()) throw ValueError("CachingAllocator::free: pointer was not allocated here or is already freed");
  const Block block = it->second;
  live_.erase(it);
  const auto size = static_cast<std::int64_t>(block.size);
  stats_.allocated_bytes -= size;
  if (stats_.cached_bytes <= cache_limit_ - size) {
    free_lists_[{block.stream, block.size}].push_back(ptr);
    stats_.cached_bytes += size;
  } else {
    backend_.release(ptr);
    ++stats_.backend_releases;
  }
}

void CachingAllocator::release_cached_locked() {
  for (auto& [key, blocks] : free_lists_) {
    while (!blocks.empty()) {
      backend_.release(blocks.back());
      ++stats_.backend_releases;
      stats_.cached_bytes -= static_cast<std::int64_t>(key.second);
      blocks.pop_back();
    }
  }
  free_lists_.clear();
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  release_cached_locked();
}

void CachingAllocator::set_cache_limit(std::int64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  cache_limit_ = std::max<std::int64_t>(bytes, 0);
  if (stats_.cached_bytes > cache_limit_) release_cached_locked();
}

CachingAllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void CachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak_allocated_bytes = stats_.allocated_bytes;
}

}  // namespace gattn::cuda
