// Staging buffers and their pool (see staging_pool.h).
#include "framework/dist/staging_pool.h"

#include <algorithm>

#include "core/cuda/copy.h"
#include "core/cuda/pinned_buffer.h"  // declared in every build, defined in CUDA builds

namespace gattn::dist {

namespace {

constexpr std::size_t kPage = 4096;

std::size_t round_to_pages(std::size_t bytes) { return (std::max<std::size_t>(bytes, 1) + kPage - 1) / kPage * kPage; }

}  // namespace

StagingBuffer::StagingBuffer(std::size_t capacity, Device device) : device_(device), capacity_(capacity) {
#ifdef GATTN_WITH_CUDA
  if (device == Device::cuda) {
    pinned_.reset(new cuda::PinnedBuffer(capacity));
    data_ = pinned_->data();
    return;
  }
#endif
  plain_.resize(capacity);
  data_ = plain_.data();
}

StagingBuffer::~StagingBuffer() = default;

// PinnedBuffer's destructor waits for an upload still reading it, then frees the pages.
void StagingBuffer::PinnedDelete::operator()(cuda::PinnedBuffer* p) const {
#ifdef GATTN_WITH_CUDA
  delete p;
#else
  (void)p;  // never made without CUDA
#endif
}

void StagingBuffer::stage_in(const void* src, std::size_t bytes) {
  // A device-to-host copy_bytes synchronises the compute stream: the data is here on return, and
  // every earlier stage_out from this buffer has finished reading it.
  cuda::copy_bytes(data_, Device::cpu, src, device_, bytes);
}

void StagingBuffer::stage_out(void* dst, std::size_t bytes) {
#ifdef GATTN_WITH_CUDA
  if (pinned_) {
    // Through PinnedBuffer, which records the copy: from pinned memory the DMA runs after the call
    // returns, and wait_reads() and the destructor must know when it is done (copy.h).
    pinned_->upload_bytes(dst, 0, bytes);
    return;
  }
#endif
  cuda::copy_bytes(dst, device_, data_, Device::cpu, bytes);
}

void StagingBuffer::wait_reads() const {
#ifdef GATTN_WITH_CUDA
  if (pinned_) pinned_->wait();
#endif
}

StagingLease::~StagingLease() {
  if (buffer_) (void)buffer_.release();  // leaked on purpose: see staging_pool.h
}

void StagingLease::give_back() {
  if (buffer_) pool_->release(std::move(buffer_));
}

StagingLease StagingPool::acquire(std::size_t bytes) {
  auto it = free_.lower_bound(bytes);
  if (it == free_.end()) {
    ++allocations_;
    return StagingLease(*this, std::make_unique<StagingBuffer>(round_to_pages(bytes), device_));
  }
  std::unique_ptr<StagingBuffer> buffer = std::move(it->second);
  free_.erase(it);
  buffer->wait_reads();  // the last collective's copy back may still be reading it
  return StagingLease(*this, std::move(buffer));
}

void StagingPool::release(std::unique_ptr<StagingBuffer> buffer) {
  const std::size_t capacity = buffer->capacity();
  free_.emplace(capacity, std::move(buffer));
}

}  // namespace gattn::dist
