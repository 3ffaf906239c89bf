// The policy of the device caching allocator, apart from cudaMalloc/cudaFree so it can be tested on
// the CPU with a fake backend (tests/unit/test_caching_allocator.cpp).
//
// Why: cudaMalloc and cudaFree are slow and cudaFree synchronises the whole device, while training
// allocates the same activation and gradient sizes every step. Freed blocks therefore go to free
// lists and the next request of the same bin on the same stream reuses one, so after the first
// step no backend allocation happens at all (stats().backend_allocations stops growing).
//
// Policy:
// - Bins: a request is rounded up to a multiple of 512 bytes (keeps every block 512-aligned for
//   vector loads and cuBLAS) and, from 64 KiB on, to one of 8 classes per power of two (at most
//   12.5% slack), so buffers of nearly equal size share a bin.
// - No splitting: a block is one backend allocation and is reused whole, only for requests of its
//   own bin. Splitting large blocks (PyTorch's way) saves memory when sizes drift, but needs
//   coalescing on free and makes fragmentation hard to reason about; training repeats its sizes
//   exactly, so exact-bin reuse hits almost always. Revisit if variable-length batches arrive.
// - Per stream: a freed block returns to the free list of the stream it was allocated for, and
//   only requests on that stream reuse it; work on one stream runs in order, so the block's last
//   user has finished before the new one starts without any event. A block used on a second
//   stream would need an event recorded there before reuse (not needed while there is one stream).
// - Cap: cached bytes are capped (default: no cap); a block freed beyond the cap goes back to the
//   backend. empty_cache() returns every cached block.
// - Out of memory: when the backend has no memory, every cached block (all streams and bins) is
//   released and the request retried once before CudaOutOfMemory is thrown.
// Thread-safe.
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gattn::cuda {

// Identifies a stream (its cudaStream_t as an integer); the policy never dereferences it.
using StreamKey = std::uintptr_t;

// Where the memory really comes from: cudaMalloc/cudaFree on the device, a fake in tests.
class MemoryBackend {
 public:
  virtual ~MemoryBackend() = default;
  // Returns nullptr when out of memory; throws on any other failure.
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void release(void* ptr) = 0;
};

struct CachingAllocatorStats {
  std::int64_t allocated_bytes = 0;       // in blocks handed out now (bin sizes)
  std::int64_t peak_allocated_bytes = 0;  // most allocated_bytes since construction or reset_peak()
  std::int64_t cached_bytes = 0;          // in the free lists now
  std::int64_t backend_allocations = 0;   // cudaMalloc calls so far
  std::int64_t backend_releases = 0;      // cudaFree calls so far
  std::int64_t cache_hits = 0;            // requests served from a free list
};

class CachingAllocator {
 public:
  static constexpr std::int64_t kNoCap = std::numeric_limits<std::int64_t>::max();

  explicit CachingAllocator(MemoryBackend& backend) : backend_(backend) {}
  // Releases the cached blocks; blocks still handed out are left alone (their owner may outlive us).
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A block of at least `bytes` (a unique pointer even for 0) for use on `stream`.
  void* allocate(std::size_t bytes, StreamKey stream);
  // `ptr` must come from allocate() and not be freed yet (throws ValueError otherwise).
  void free(void* ptr);
  void empty_cache();
  void set_cache_limit(std::int64_t bytes);  // negative means 0; kNoCap lifts the cap
  CachingAllocatorStats stats() const;
  void reset_peak();

  // The bin a request of `bytes` is rounded to (see the policy above).
  static std::size_t bin_size(std::size_t bytes);

 private:
  struct Block {
    std::size_t size;
    StreamKey stream;
  };
  void release_cached_locked();  // caller holds mutex_

  MemoryBackend& backend_;
  mutable std::mutex mutex_;
  std::map<std::pair<StreamKey, std::size_t>, std::vector<void*>> free_lists_;  // by (stream, bin)
  std::unordered_map<void*, Block> live_;
  CachingAllocatorStats stats_;
  std::int64_t cache_limit_ = kNoCap;
};

}  // namespace gattn::cuda
