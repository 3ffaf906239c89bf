// Temporary device memory for a kernel's partial results, from the caching allocator and returned
// when the scope ends. The free is stream-ordered (core/cuda/device_memory.h), so kernels
// queued before it still own the block. CUDA builds only.
#pragma once
#include <cstddef>

#include "core/cuda/device_memory.h"

namespace gattn::cuda {

class Scratch {
 public:
  explicit Scratch(std::size_t bytes) : ptr_(bytes ? device_allocate(bytes) : nullptr) {}
  ~Scratch() {
    if (ptr_) device_free(ptr_);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  void* ptr_;
};

}  // namespace gattn::cuda
