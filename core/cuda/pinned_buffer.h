// Page-locked host memory for data loading: copies from it to the device run truly asynchronously
// (DMA, no staging through a driver buffer), so the loader can fill the next batch while the GPU
// still reads the last one. Only defined in CUDA builds (GATTN_WITH_CUDA).
//
// Use: fill data(), upload(dst), and call wait() before writing data() again; with two buffers the
// host fills one while the other is in flight.
#pragma once
#include <cstddef>

#include "core/cuda/stream.h"

namespace gattn {
class Tensor;
}

namespace gattn::cuda {

class PinnedBuffer {
 public:
  // Throws DeviceError without a device, CudaError when the host cannot pin that much.
  explicit PinnedBuffer(std::size_t bytes);
  ~PinnedBuffer();  // waits for an in-flight copy first: freeing memory the DMA still reads is undefined
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  void* data() { return data_; }
  const void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }

  // Queues a copy of the first numel × dtype-size bytes of this buffer into the CUDA tensor `dst` on the
  // compute stream and returns at once. Kernels queued after it see the data.
  void upload(Tensor& dst);
  // Queues a copy of bytes [offset, offset + bytes) of this buffer to device memory `dst`, likewise.
  void upload_bytes(void* dst, std::size_t offset, std::size_t bytes);
  // Queues a copy of the CUDA tensor `src` into the start of this buffer; wait() before reading it.
  void download(const Tensor& src);
  // Blocks until the last upload/download has finished, so data() may be rewritten or read.
  void wait() const;
  bool ready() const { return done_.query(); }

 private:
  std::size_t check_tensor(const Tensor& t, const char* what) const;

  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  Event done_;  // recorded after each queued copy
};

}  // namespace gattn::cuda
