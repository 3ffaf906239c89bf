// Storage allocation: CPU buffers from the host caching allocator, CUDA buffers from the device one.
#include "core/tensor/storage.h"

#include <atomic>
#include <string>

#include "core/cuda/device_memory.h"
#include "core/tensor/cpu_allocator.h"

namespace gattn {

namespace {
std::atomic<std::int64_t> g_current_bytes{0};
std::atomic<std::int64_t> g_peak_bytes{0};

void note_allocation(std::int64_t bytes) {
  std::int64_t now = g_current_bytes.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  std::int64_t peak = g_peak_bytes.load(std::memory_order_relaxed);
  while (now > peak && !g_peak_bytes.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}
}  // namespace

StorageMemoryStats storage_memory_stats() {
  return {g_current_bytes.load(std::memory_order_relaxed), g_peak_bytes.load(std::memory_order_relaxed)};
}

void reset_storage_peak() {
  g_peak_bytes.store(g_current_bytes.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

Storage::Storage(std::size_t bytes, Device device) : bytes_(bytes), device_(device) {
  if (device == Device::cuda) {
    // Throws DeviceError naming the reason in CPU-only builds and on machines without a device.
    data_ = cuda::device_allocate(bytes);
    return;
  }
  data_ = cpu_allocate(bytes);
  note_allocation(static_cast<std::int64_t>(bytes_));
}

Storage::~Storage() {
  if (device_ == Device::cuda) {
    try {
      cuda::device_free(data_);
    } catch (...) {
      // A destructor must not throw; the allocator only fails on a pointer it never gave out.
    }
    return;
  }
  cpu_free(data_, bytes_);
  g_current_bytes.fetch_sub(static_cast<std::int64_t>(bytes_), std::memory_order_relaxed);
}

}  // namespace gattn
