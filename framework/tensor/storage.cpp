// Storage allocation. CUDA storage arrives with the CUDA backend issue; until then it is refused.
#include "framework/tensor/storage.h"

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>

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

void reset_storage_peak() { g_peak_bytes.store(g_current_bytes.load(std::memory_order_relaxed), std::memory_order_relaxed); }

Storage::Storage(std::size_t bytes, Device device) : bytes_(bytes), device_(device) {
  if (device != Device::cpu) throw DeviceError("Storage: CUDA tensors are not available in this build yet");
  std::size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded == 0) rounded = 64;
  data_ = std::aligned_alloc(64, rounded);
  if (!data_) throw std::bad_alloc();
  note_allocation(static_cast<std::int64_t>(bytes_));
}

Storage::~Storage() {
  std::free(data_);
  g_current_bytes.fetch_sub(static_cast<std::int64_t>(bytes_), std::memory_order_relaxed);
}

}  // namespace gattn
