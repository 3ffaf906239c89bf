// Collectives over device buffers carried by a host communicator: each buffer is copied into a host
// staging buffer, the host communicator (MPI) runs the collective there, and the result is copied
// back. It lets several ranks share one GPU, which NCCL refuses (one rank per device). It costs two
// host-device copies per collective and the host's reduction speed; on one GPU per rank NCCL is
// the faster path (docs/distributed-and-gpu.md).
//
// Staging buffers come from a pool (staging_pool.h), pinned for CUDA buffers, and are reused, so
// the steady state allocates nothing. Copies are ordered on the compute stream like every kernel.
#pragma once
#include "framework/dist/communicator.h"
#include "framework/dist/staging_pool.h"

namespace gattn::dist {

class StagedCommunicator final : public Communicator {
 public:
  // `host` works on CPU buffers (DistError otherwise) and must outlive this communicator; `device`
  // is where the buffers given to the collectives live (cuda; cpu stages through host memory all
  // the same, which the unit tests use). A CUDA device without one is a DeviceError.
  StagedCommunicator(Communicator& host, Device device);

  int rank() const override { return host_.rank(); }
  int size() const override { return host_.size(); }
  std::string backend() const override { return host_.backend() + "-staged"; }  // "mpi-staged"
  Device device() const override { return pool_.device(); }
  void set_timeout(double seconds) override { host_.set_timeout(seconds); }
  double timeout() const override { return host_.timeout(); }

  // Stages `data` in and starts the host's all-reduce; wait() waits for it and queues the copy
  // back, so several buckets can be in flight. Wait every Work before destroying the communicator.
  std::unique_ptr<Work> all_reduce_async(void* data, std::int64_t count, DType dtype, ReduceOp op,
                                         const std::string& what) override;
  using Communicator::broadcast;
  void broadcast(void* data, std::int64_t count, DType dtype, int root, const std::string& what) override;
  void reduce_scatter(const void* send, void* recv, std::int64_t recv_count, DType dtype, ReduceOp op,
                      const std::string& what) override;
  void all_gather(const void* send, void* recv, std::int64_t send_count, DType dtype, const std::string& what) override;
  void barrier(const std::string& what) override { host_.barrier(what); }

  // Staging buffers allocated so far: constant over steps once the first has run.
  std::int64_t staging_allocations() const { return pool_.allocations(); }

 private:
  Communicator& host_;
  StagingPool pool_;
};

}  // namespace gattn::dist
