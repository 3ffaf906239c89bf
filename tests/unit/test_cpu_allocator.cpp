// The CPU caching allocator: large blocks are reused, small ones are not cached, the cap holds,
// and tensors built on it keep their contents independent.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "core/tensor/cpu_allocator.h"
#include "core/tensor/tensor.h"

namespace gattn {
namespace {

TEST(CpuAllocator, ReusesAFreedLargeBlockOfTheSameSizeClass) {
  cpu_allocator_empty_cache();
  const std::size_t bytes = 300000;
  void* a = cpu_allocate(bytes);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a) % 64, 0u);
  std::memset(a, 1, bytes);  // the whole requested size is usable
  cpu_free(a, bytes);
  const CpuAllocatorStats before = cpu_allocator_stats();
  EXPECT_GT(before.cached_bytes, 0);
  void* b = cpu_allocate(bytes + 100);  // same class
  EXPECT_EQ(a, b);
  EXPECT_EQ(cpu_allocator_stats().hits, before.hits + 1);
  EXPECT_EQ(cpu_allocator_stats().cached_bytes, 0);
  cpu_free(b, bytes + 100);
  cpu_allocator_empty_cache();
  EXPECT_EQ(cpu_allocator_stats().cached_bytes, 0);
}

TEST(CpuAllocator, LeavesSmallBlocksToMallocAndRespectsTheCap) {
  cpu_allocator_empty_cache();
  void* small = cpu_allocate(1000);
  cpu_free(small, 1000);
  EXPECT_EQ(cpu_allocator_stats().cached_bytes, 0);
  set_cpu_allocator_cache_limit(1 << 20);
  void* big = cpu_allocate(std::size_t{4} << 20);  // larger than the cap: freed to the system
  cpu_free(big, std::size_t{4} << 20);
  EXPECT_EQ(cpu_allocator_stats().cached_bytes, 0);
  set_cpu_allocator_cache_limit(std::int64_t{2} << 30);
}

TEST(CpuAllocator, RecycledStorageNeverAliasesALiveTensor) {
  Tensor a = Tensor::full({100000}, 1.0);
  Tensor b;
  {
    Tensor tmp = Tensor::full({100000}, 2.0);
    b = Tensor::full({100000}, 3.0);
  }                                        // tmp's block goes back to the cache
  Tensor c = Tensor::full({100000}, 4.0);  // reuses it
  EXPECT_EQ(a.at(99999), 1.0);
  EXPECT_EQ(b.at(99999), 3.0);
  EXPECT_EQ(c.at(0), 4.0);
  EXPECT_FALSE(c.shares_storage_with(a));
  EXPECT_FALSE(c.shares_storage_with(b));
}

}  // namespace
}  // namespace gattn
