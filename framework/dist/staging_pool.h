// Host buffers that device buffers are staged through on their way to a host communicator
// (staged_communicator.h), kept in a pool and reused, so a training step in the steady state
// allocates none: pinned memory is slow to allocate (the pages are locked) and a step stages every
// gradient bucket. Used from one thread, like the communicators.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "core/tensor/dtype.h"

namespace gattn::cuda {
class PinnedBuffer;
}

namespace gattn::dist {

// One host buffer for buffers of `device`: pinned (page-locked) when the device is CUDA, so both
// copies are DMA on the compute stream; plain host memory for CPU buffers (the unit tests'
// staging) and in builds without CUDA.
class StagingBuffer {
 public:
  StagingBuffer(std::size_t capacity, Device device);
  ~StagingBuffer();  // waits for a stage_out still reading the buffer
  StagingBuffer(const StagingBuffer&) = delete;
  StagingBuffer& operator=(const StagingBuffer&) = delete;

  void* data() { return data_; }
  std::size_t capacity() const { return capacity_; }
  // Copies `bytes` from `src` on the device into the buffer; returns once they have arrived.
  void stage_in(const void* src, std::size_t bytes);
  // Copies the first `bytes` of the buffer to `dst` on the device, queued on the compute stream
  // (kernels queued later see the data); the buffer must not be written until wait_reads().
  void stage_out(void* dst, std::size_t bytes);
  // Blocks until the last stage_out has finished reading the buffer.
  void wait_reads() const;

 private:
  // PinnedBuffer is defined only in CUDA builds; the deleter is, in every build, in the .cpp.
  struct PinnedDelete {
    void operator()(cuda::PinnedBuffer* p) const;
  };
  Device device_;
  std::size_t capacity_;
  std::unique_ptr<cuda::PinnedBuffer, PinnedDelete> pinned_;
  std::vector<std::byte> plain_;
  void* data_ = nullptr;
};

class StagingPool;

// A buffer on loan from the pool. give_back() returns it once the collective that used it has
// completed. A lease dropped without give_back() (an exception unwound past a collective that may
// still be in flight, whose host transfer could yet write into the buffer) leaks its buffer rather
// than reuse or free memory a peer may still write, as MpiCommunicator leaves such a request.
class StagingLease {
 public:
  StagingLease(StagingPool& pool, std::unique_ptr<StagingBuffer> buffer) : pool_(&pool), buffer_(std::move(buffer)) {}
  ~StagingLease();
  StagingLease(StagingLease&& other) noexcept = default;
  StagingLease& operator=(StagingLease&&) = delete;
  StagingLease(const StagingLease&) = delete;
  StagingLease& operator=(const StagingLease&) = delete;

  StagingBuffer& operator*() const { return *buffer_; }
  StagingBuffer* operator->() const { return buffer_.get(); }
  void give_back();

 private:
  StagingPool* pool_;
  std::unique_ptr<StagingBuffer> buffer_;
};

class StagingPool {
 public:
  explicit StagingPool(Device device) : device_(device) {}
  Device device() const { return device_; }
  // A buffer of at least `bytes` that the host may write: the smallest free one that fits, else a
  // new one (capacities are rounded up to whole pages, so slightly different sizes share buffers).
  StagingLease acquire(std::size_t bytes);
  // Buffers allocated so far. Constant once a step's pattern of sizes has been seen once.
  std::int64_t allocations() const { return allocations_; }
  std::size_t free_buffers() const { return free_.size(); }

 private:
  friend class StagingLease;
  void release(std::unique_ptr<StagingBuffer> buffer);

  Device device_;
  std::multimap<std::size_t, std::unique_ptr<StagingBuffer>> free_;  // capacity -> buffer
  std::int64_t allocations_ = 0;
};

}  // namespace gattn::dist
