// Ref-counted, 64-byte aligned buffers that tensors share.
#pragma once
#include <cstddef>
#include <memory>

#include "framework/tensor/dtype.h"

namespace gattn {

class Storage {
 public:
  // Allocates `bytes` on `device` (uninitialised). CPU buffers are 64-byte aligned for SIMD loads.
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

}  // namespace gattn
