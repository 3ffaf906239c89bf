// Storage allocation. CUDA storage arrives with the CUDA backend issue; until then it is refused.
#include "framework/tensor/storage.h"

#include <cstdlib>
#include <new>
#include <string>

namespace gattn {

Storage::Storage(std::size_t bytes, Device device) : bytes_(bytes), device_(device) {
  if (device != Device::cpu) throw DeviceError("Storage: CUDA tensors are not available in this build yet");
  std::size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded == 0) rounded = 64;
  data_ = std::aligned_alloc(64, rounded);
  if (!data_) throw std::bad_alloc();
}

Storage::~Storage() { std::free(data_); }

}  // namespace gattn
