// Moving training batches to the GPU through page-locked (pinned) host memory: the copy is a DMA
// queued on the compute stream, so the host returns at once and samples the next batch while the
// GPU still runs the current step. Two slots alternate; a slot is rewritten only after its last
// copy has finished; a seq2seq batch's source travels in the same slot. On the CPU (or in a build
// without CUDA) batches pass through unchanged.
#pragma once
#include <memory>

#include "framework/data/dataset.h"

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
  struct Slots;  // the pinned buffers (CUDA builds; empty otherwise)
  Device device_;
  std::unique_ptr<Slots> slots_;
};

}  // namespace gattn::recipes
