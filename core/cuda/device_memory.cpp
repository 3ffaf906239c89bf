// The process-wide device caching allocator over cudaMalloc/cudaFree (CUDA builds only).
#ifdef GATTN_WITH_CUDA
#include "core/cuda/device_memory.h"

#include <cuda_runtime.h>

#include "core/cuda/device.h"
#include "core/cuda/error.h"
#include "core/cuda/stream.h"

namespace gattn::cuda {

namespace {
class CudaMallocBackend final : public MemoryBackend {
 public:
  void* allocate(std::size_t bytes) override {
    void* ptr = nullptr;
    const cudaError_t e = cudaMalloc(&ptr, bytes);
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // not sticky: clear it, the allocator retries after emptying its cache
      return nullptr;
    }
    GATTN_CUDA_CHECK(e);
    return ptr;
  }
  void release(void* ptr) override { GATTN_CUDA_CHECK(cudaFree(ptr)); }
};

CachingAllocator& allocator() {
  // Never destroyed: tensors held by statics may be freed after any destructor of ours would run.
  static CudaMallocBackend* backend = new CudaMallocBackend;
  static CachingAllocator* instance = new CachingAllocator(*backend);
  return *instance;
}

StreamKey compute_stream_key() { return reinterpret_cast<StreamKey>(compute_stream().handle()); }
}  // namespace

void* device_allocate(std::size_t bytes) {
  require_device("device_allocate");
  return allocator().allocate(bytes, compute_stream_key());
}

void device_free(void* ptr) { allocator().free(ptr); }

CachingAllocatorStats device_allocator_stats() { return allocator().stats(); }
void device_allocator_empty_cache() { allocator().empty_cache(); }
void set_device_allocator_cache_limit(std::int64_t bytes) { allocator().set_cache_limit(bytes); }
void reset_device_allocator_peak() { allocator().reset_peak(); }

}  // namespace gattn::cuda
#endif
