// Gradient averaging for data parallelism without sharding (dist.zero: 0): the parameters'
// gradients are grouped into flat buckets (sharding.h's plan, last layers first), and a bucket's
// all-reduce is launched as soon as the last of its parameters reports its gradient ready, so
// communication of the late layers overlaps with the backward of the early ones. On the CPU the
// trainer reports all parameters after backward (ready_all), which still overlaps packing a bucket
// with the reduction of the one before. The trainer also installs ready_leaf as the autograd
// engine's leaf-ready hook for the last backward of a step, so buckets start during backward. On a
// GPU the buckets live on the device and NCCL runs them on its communication stream, ordered after
// the compute stream by an event, so backward keeps computing while they travel.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/tensor/tensor.h"
#include "framework/dist/communicator.h"

namespace gattn::dist {

class GradientBuckets {
 public:
  using NamedParameters = std::vector<std::pair<std::string, Tensor>>;
  // 1 Mi elements (4 MiB of f32) per bucket: large enough for full-bandwidth collectives, small
  // enough that the first bucket starts early in backward (the trainer passes dist.bucket_mb).
  static constexpr std::int64_t kDefaultBucketElements = 1 << 20;

  // Parameters must be f32 tensors on comm.device() and outlive this object. `wire_dtype` is the
  // buckets' type on the wire: f32, or bf16 (half the traffic; each gradient rounded to bf16 before
  // the sum, which is then taken in bf16 as DDP's bf16 compression hook does).
  GradientBuckets(NamedParameters params, Communicator& comm, std::int64_t bucket_elements = kDefaultBucketElements,
                  DType wire_dtype = DType::f32);

  // Parameter `index`'s gradient for this step is final. Launches its bucket's all-reduce when it
  // was the bucket's last one. A parameter without a gradient contributes zeros.
  void ready(std::size_t index);
  // ready() for the parameter whose tensor is `leaf`; other tensors are ignored.
  void ready_leaf(const TensorImpl& leaf);
  // Reports every parameter not reported yet, last first.
  void ready_all();
  // Waits for every bucket, then writes the mean over ranks into each parameter's grad (defining
  // it where a parameter had none). Throws DistError when a bucket times out.
  void finish();

  std::size_t num_buckets() const { return buckets_.size(); }
  // Buckets launched and not yet finished (for tests of the overlap).
  std::size_t buckets_in_flight() const;

 private:
  struct Bucket {
    std::vector<std::size_t> members;  // parameter indices, ascending
    Tensor flat;                       // wire_dtype, their gradients back to back
    std::size_t pending = 0;
    std::unique_ptr<Work> work;
  };
  void launch(std::size_t b);

  NamedParameters params_;
  Communicator& comm_;
  DType wire_dtype_;
  std::vector<Bucket> buckets_;
  std::vector<std::size_t> bucket_of_;  // per parameter
  std::vector<bool> reported_;
  std::unordered_map<const TensorImpl*, std::size_t> index_of_leaf_;
};

}  // namespace gattn::dist
