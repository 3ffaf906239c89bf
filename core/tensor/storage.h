// Ref-counted buffers that tensors share, on the host or a CUDA device.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/tensor/dtype.h"

namespace gattn {

class Storage {
 public:
  // Allocates `bytes` on `device` (uninitialised). CPU buffers are 64-byte aligned for SIMD loads;
  // CUDA buffers come from the device caching allocator (core/cuda/device_memory.h) and throw
  // DeviceError in a build without CUDA or on a machine without a device.
  Storage(std::size_t bytes, Device device);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  Device device() const { return device_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  Device device_ = Device::cpu;
};

// Bytes of CPU tensor storage alive now and the most alive at once since the last reset: how the
// benchmarks measure an op's peak memory (e.g. fused vs materialised attention).
struct StorageMemoryStats {
  std::int64_t current_bytes = 0;
  std::int64_t peak_bytes = 0;
};
StorageMemoryStats storage_memory_stats();
// Sets the peak to the current value.
void reset_storage_peak();

}  // namespace gattn
