// Moving training batches to the GPU through page-locked (pinned) host memory: the copy is a DMA
// queued on the compute stream, so the host returns at once and samples the next batch while the
// GPU still runs the current step. Two slots alternate; a slot is rewritten only after its last
// copy has finished. On the CPU (or in a build without CUDA) batches pass through unchanged.
#pragma once
#include <array>
#include <cstddef>
#include <memory>

#include "framework/data/dataset.h"

namespace gattn::cuda {
class PinnedBuffer;
}

namespace gattn::recipes {

class BatchUploader {
 public:
  explicit BatchUploader(Device device);
  ~BatchUploader();
  BatchUploader(const BatchUploader&) = delete;
  BatchUploader& operator=(const BatchUploader&) = delete;

  // The batch on the device (new tensors each call: the previous step's may still be in use).
  Batch upload(const Batch& host);

 private:
  Device device_;
  std::array<std::unique_ptr<cuda::PinnedBuffer>, 2> slots_;
  std::size_t next_ = 0;
};

}  // namespace gattn::recipes
