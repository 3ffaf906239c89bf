#include "recipes/train/batch_upload.h"

#include <array>
#include <cstddef>
#include <cstring>

#ifdef GATTN_WITH_CUDA
#include "framework/cuda/pinned_buffer.h"
#endif

namespace gattn::recipes {

#ifdef GATTN_WITH_CUDA
struct BatchUploader::Slots {
  std::array<std::unique_ptr<cuda::PinnedBuffer>, 2> buffers;
  std::size_t next = 0;
};
#else
struct BatchUploader::Slots {};
#endif

BatchUploader::BatchUploader(Device device) : device_(device), slots_(std::make_unique<Slots>()) {}
BatchUploader::~BatchUploader() = default;

Batch BatchUploader::upload(const Batch& host) {
  if (device_ == Device::cpu) return host;
#ifdef GATTN_WITH_CUDA
  const Tensor& x = host.x;  // tensors are always contiguous
  const Tensor& y = host.y;
  const std::size_t x_bytes = static_cast<std::size_t>(x.numel()) * dtype_size(x.dtype());
  const std::size_t y_bytes = static_cast<std::size_t>(y.numel()) * dtype_size(y.dtype());
  // x and y share one slot (one copy each, one wait), laid out back to back.
  std::unique_ptr<cuda::PinnedBuffer>& slot = slots_->buffers[slots_->next];
  slots_->next = (slots_->next + 1) % slots_->buffers.size();
  if (!slot || slot->bytes() < x_bytes + y_bytes) {
    slot.reset();  // waits for its in-flight copy before freeing
    slot = std::make_unique<cuda::PinnedBuffer>(x_bytes + y_bytes);
  }
  slot->wait();
  auto* bytes = static_cast<unsigned char*>(slot->data());
  std::memcpy(bytes, x.raw_data(), x_bytes);
  std::memcpy(bytes + x_bytes, y.raw_data(), y_bytes);
  Batch out{Tensor::empty(x.shape(), x.dtype(), device_), Tensor::empty(y.shape(), y.dtype(), device_)};
  slot->upload_bytes(out.x.raw_data(), 0, x_bytes);
  slot->upload_bytes(out.y.raw_data(), x_bytes, y_bytes);
  return out;
#else
  return Batch{host.x.to(device_), host.y.to(device_)};
#endif
}

}  // namespace gattn::recipes
