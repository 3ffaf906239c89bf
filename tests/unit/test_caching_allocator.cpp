// The device caching allocator's policy over a fake backend: bins, per-stream reuse, no backend
// allocation in the steady state, the cap, empty_cache and the out-of-memory retry. Runs on the CPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/cuda/caching_allocator.h"
#include "core/cuda/error.h"

namespace gattn::cuda {
namespace {

// Hands out malloc'ed blocks, counts calls and can pretend to be out of memory beyond a budget.
class FakeBackend final : public MemoryBackend {
 public:
  void* allocate(std::size_t bytes) override {
    if (in_use + static_cast<std::int64_t>(bytes) > budget) return nullptr;
    in_use += static_cast<std::int64_t>(bytes);
    void* p = std::malloc(bytes);
    sizes[p] = bytes;
    ++allocations;
    return p;
  }
  void release(void* ptr) override {
    in_use -= static_cast<std::int64_t>(sizes.at(ptr));
    sizes.erase(ptr);
    std::free(ptr);
    ++releases;
  }
  std::int64_t budget = std::int64_t{1} << 40;
  std::int64_t in_use = 0;
  int allocations = 0, releases = 0;
  std::unordered_map<void*, std::size_t> sizes;
};

constexpr StreamKey kStreamA = 1, kStreamB = 2;

TEST(CachingAllocator, BinsRoundTo512BytesThenToEightClassesPerPowerOfTwo) {
  EXPECT_EQ(CachingAllocator::bin_size(0), 512u);
  EXPECT_EQ(CachingAllocator::bin_size(1), 512u);
  EXPECT_EQ(CachingAllocator::bin_size(512), 512u);
  EXPECT_EQ(CachingAllocator::bin_size(513), 1024u);
  EXPECT_EQ(CachingAllocator::bin_size(65535), 65536u);
  EXPECT_EQ(CachingAllocator::bin_size(65537), 65536u + 8192u);
  EXPECT_EQ(CachingAllocator::bin_size(std::size_t{1} << 20), std::size_t{1} << 20);
  EXPECT_EQ(CachingAllocator::bin_size((std::size_t{1} << 20) + 1), (std::size_t{1} << 20) + (std::size_t{1} << 17));
  for (std::size_t bytes :
       {std::size_t{1}, std::size_t{1000}, std::size_t{70000}, std::size_t{3000000}, std::size_t{123456789}}) {
    const std::size_t bin = CachingAllocator::bin_size(bytes);
    EXPECT_GE(bin, bytes);
    EXPECT_EQ(bin % 512, 0u);
    if (bytes >= 65536) {
      EXPECT_LE(static_cast<double>(bin), 1.125 * static_cast<double>(bytes) + 512);
    }
    EXPECT_EQ(CachingAllocator::bin_size(bin), bin);  // a bin is its own bin
  }
}

TEST(CachingAllocator, SteadyStateTrainingStepsNeverReachTheBackend) {
  FakeBackend backend;
  CachingAllocator alloc(backend);
  const std::vector<std::size_t> step_sizes = {4, 1000, 70000, 70001, 3 << 20, 12345678, 1000};
  auto run_step = [&] {
    std::vector<void*> live;
    for (std::size_t s : step_sizes) live.push_back(alloc.allocate(s, kStreamA));
    EXPECT_EQ(std::set<void*>(live.begin(), live.end()).size(), live.size()) << "two live blocks alias";
    for (void* p : live) alloc.free(p);
  };
  run_step();
  const CachingAllocatorStats first = alloc.stats();
  EXPECT_EQ(first.backend_allocations, static_cast<std::int64_t>(step_sizes.size()));
  EXPECT_EQ(first.allocated_bytes, 0);
  EXPECT_GT(first.cached_bytes, 0);
  for (int step = 0; step < 5; ++step) run_step();
  const CachingAllocatorStats later = alloc.stats();
  EXPECT_EQ(later.backend_allocations, first.backend_allocations);
  EXPECT_EQ(later.backend_releases, 0);
  EXPECT_EQ(later.cache_hits, 5 * static_cast<std::int64_t>(step_sizes.size()));
  EXPECT_EQ(later.cached_bytes, first.cached_bytes);
  EXPECT_EQ(later.peak_allocated_bytes, first.peak_allocated_bytes);
}

TEST(CachingAllocator, ReusesABlockOnlyForItsBinAndItsStream) {
  FakeBackend backend;
  CachingAllocator alloc(backend);
  void* a = alloc.allocate(100000, kStreamA);
  alloc.free(a);
  EXPECT_EQ(alloc.allocate(100100, kStreamA), a);  // same bin, same stream: reused
  alloc.free(a);
  void* b = alloc.allocate(100000, kStreamB);  // another stream: a fresh block
  EXPECT_NE(b, a);
  void* c = alloc.allocate(50000, kStreamA);  // another bin: a fresh block (no splitting)
  EXPECT_NE(c, a);
  EXPECT_EQ(alloc.stats().backend_allocations, 3);
  EXPECT_EQ(alloc.stats().allocated_bytes,
            static_cast<std::int64_t>(CachingAllocator::bin_size(100000) + CachingAllocator::bin_size(50000)));
  alloc.free(b);
  alloc.free(c);
}

TEST(CachingAllocator, TheCapAndEmptyCacheReturnBlocksToTheBackend) {
  FakeBackend backend;
  CachingAllocator alloc(backend);
  alloc.set_cache_limit(1 << 20);
  void* small = alloc.allocate(1000, kStreamA);
  void* big = alloc.allocate(4 << 20, kStreamA);
  alloc.free(big);  // beyond the cap: released at once
  EXPECT_EQ(backend.releases, 1);
  alloc.free(small);
  EXPECT_EQ(alloc.stats().cached_bytes, 1024);
  alloc.set_cache_limit(512);  // lowering the cap below the cache empties it
  EXPECT_EQ(alloc.stats().cached_bytes, 0);
  EXPECT_EQ(backend.releases, 2);
  alloc.set_cache_limit(CachingAllocator::kNoCap);
  alloc.free(alloc.allocate(2000, kStreamA));
  alloc.free(alloc.allocate(2000, kStreamB));
  EXPECT_EQ(alloc.stats().cached_bytes, 4096);
  alloc.empty_cache();
  EXPECT_EQ(alloc.stats().cached_bytes, 0);
  EXPECT_EQ(backend.in_use, 0);
  EXPECT_EQ(alloc.stats().backend_releases, backend.releases);
}

TEST(CachingAllocator, OutOfMemoryEmptiesTheCacheAndRetriesBeforeThrowing) {
  FakeBackend backend;
  backend.budget = 3 << 20;
  CachingAllocator alloc(backend);
  alloc.free(alloc.allocate(2 << 20, kStreamB));  // cached, and in the way
  void* p = alloc.allocate(2 << 20, kStreamA);    // succeeds only after the cache is released
  EXPECT_NE(p, nullptr);
  EXPECT_EQ(alloc.stats().cached_bytes, 0);
  try {
    alloc.allocate(2 << 20, kStreamA);
    FAIL() << "expected CudaOutOfMemory";
  } catch (const CudaOutOfMemory& e) {
    EXPECT_NE(std::string(e.what()).find("out of memory"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::to_string(2 << 20)), std::string::npos) << e.what();
  }
  EXPECT_EQ(alloc.stats().allocated_bytes, 2 << 20);  // the failure left the books straight
  alloc.free(p);
}

TEST(CachingAllocator, FreeingAForeignPointerIsAnError) {
  FakeBackend backend;
  CachingAllocator alloc(backend);
  int not_ours = 0;
  EXPECT_THROW(alloc.free(&not_ours), ValueError);
  void* p = alloc.allocate(10, kStreamA);
  alloc.free(p);
  EXPECT_THROW(alloc.free(p), ValueError);  // double free
  alloc.free(nullptr);                      // like free(): a no-op
}

TEST(CachingAllocator, ReleasesItsCacheWhenDestroyed) {
  FakeBackend backend;
  {
    CachingAllocator alloc(backend);
    alloc.free(alloc.allocate(1 << 20, kStreamA));
  }
  EXPECT_EQ(backend.in_use, 0);
}

}  // namespace
}  // namespace gattn::cuda
