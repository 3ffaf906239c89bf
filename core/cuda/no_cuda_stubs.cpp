// The CPU-only build's answers to device_memory.h, copy.h and device_elements.h, so the tensor core calls them
// without #ifdefs: every device request fails with "this build has no CUDA", stats stay zero.
// (stream.h, pinned_buffer.h and error.h's throw_* have no stubs: only CUDA code uses them.)
#ifndef GATTN_WITH_CUDA
#include <cstring>

#include "core/cuda/copy.h"
#include "core/cuda/device.h"
#include "core/cuda/device_elements.h"
#include "core/cuda/device_memory.h"

namespace gattn::cuda {

void* device_allocate(std::size_t) {
  require_device("device_allocate");  // always throws here
  return nullptr;
}
void device_free(void*) {}
CachingAllocatorStats device_allocator_stats() { return {}; }
void device_allocator_empty_cache() {}
void set_device_allocator_cache_limit(std::int64_t) {}
void reset_device_allocator_peak() {}

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes) {
  if (dst_device != Device::cpu || src_device != Device::cpu) require_device("copy_bytes");
  if (bytes) std::memcpy(dst, src, bytes);
}
void zero_device_bytes(void*, std::size_t) { require_device("zero_device_bytes"); }
void convert_device_elements(void*, DType, const void*, DType, std::size_t) {
  require_device("convert_device_elements");
}
void fill_device_elements(void*, DType, double, std::size_t) { require_device("fill_device_elements"); }
void add_device_elements(void*, const void*, const void*, DType, std::size_t) { require_device("add_device_elements"); }

}  // namespace gattn::cuda
#endif
