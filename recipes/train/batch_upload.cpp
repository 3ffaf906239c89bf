#include "recipes/train/batch_upload.h"

#include <array>
#include <cstddef>
#include <cstring>

#ifdef GATTN_WITH_CUDA
#include "core/cuda/pinned_buffer.h"
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
  // x, y and (seq2seq data) the source share one slot (one copy each, one wait), laid out back to
  // back. Tensors are always contiguous.
  std::array<const Tensor*, 3> parts{&host.x, &host.y, &host.source};
  std::array<std::size_t, 3> sizes{};
  std::size_t total = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const Tensor& t = *parts[i];
    sizes[i] = t.defined() ? static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype()) : 0;
    total += sizes[i];
  }
  std::unique_ptr<cuda::PinnedBuffer>& slot = slots_->buffers[slots_->next];
  slots_->next = (slots_->next + 1) % slots_->buffers.size();
  if (!slot || slot->bytes() < total) {
    slot.reset();  // waits for its in-flight copy before freeing
    slot = std::make_unique<cuda::PinnedBuffer>(total);
  }
  slot->wait();
  auto* bytes = static_cast<unsigned char*>(slot->data());
  Batch out;
  std::array<Tensor*, 3> outs{&out.x, &out.y, &out.source};
  std::size_t offset = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const Tensor& t = *parts[i];
    if (!t.defined()) continue;
    std::memcpy(bytes + offset, t.raw_data(), sizes[i]);
    *outs[i] = Tensor::empty(t.shape(), t.dtype(), device_);
    slot->upload_bytes(outs[i]->raw_data(), offset, sizes[i]);
    offset += sizes[i];
  }
  return out;
#else
  return Batch{host.x.to(device_), host.y.to(device_), host.source.defined() ? host.source.to(device_) : Tensor()};
#endif
}

}  // namespace gattn::recipes
