// Device memory for tensors: the process-wide caching allocator (caching_allocator.h) over
// cudaMalloc/cudaFree, allocating for the compute stream. In a CPU-only build allocating throws
// DeviceError and the stats stay zero.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/cuda/caching_allocator.h"

namespace gattn::cuda {

// Uninitialised device memory, ordered on compute_stream(); at least 512-byte aligned.
// Throws DeviceError without a device, CudaOutOfMemory when the device is full.
void* device_allocate(std::size_t bytes);
// Returns the block to the cache. Safe to call while kernels queued on the compute stream still use
// it: the next user of the block is queued after them.
void device_free(void* ptr);

CachingAllocatorStats device_allocator_stats();
void device_allocator_empty_cache();
void set_device_allocator_cache_limit(std::int64_t bytes);
void reset_device_allocator_peak();

}  // namespace gattn::cuda
