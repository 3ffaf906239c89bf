// MPI over host buffers (OpenMPI, MPICH): the CPU path of data-parallel training and the bootstrap
// of NCCL. Every collective is non-blocking (MPI_I*) and finished by a polling wait with a deadline,
// so a peer that died or stalled gives a DistError instead of a hang. Calls come from one thread
// (MPI_THREAD_FUNNELED). Reductions take f32, f64, i32 and bf16 (bf16_reduce.h); device buffers go
// through StagedCommunicator.
#pragma once
#include "framework/dist/communicator.h"

namespace gattn::dist {

class MpiCommunicator final : public Communicator {
 public:
  // Initialises MPI (once per process) and wraps MPI_COMM_WORLD. Throws DistError when MPI cannot
  // start.
  MpiCommunicator();
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "mpi"; }
  Device device() const override { return Device::cpu; }
  void set_timeout(double seconds) override { timeout_ = seconds; }
  double timeout() const override { return timeout_; }

  std::unique_ptr<Work> all_reduce_async(void* data, std::int64_t count, DType dtype, ReduceOp op,
                                         const std::string& what) override;
  using Communicator::broadcast;
  void broadcast(void* data, std::int64_t count, DType dtype, int root, const std::string& what) override;
  void reduce_scatter(const void* send, void* recv, std::int64_t recv_count, DType dtype, ReduceOp op,
                      const std::string& what) override;
  void all_gather(const void* send, void* recv, std::int64_t send_count, DType dtype, const std::string& what) override;
  void barrier(const std::string& what) override;

  // Byte broadcast for the NCCL bootstrap (ncclUniqueId) and other plain structs.
  void broadcast_bytes(void* data, std::size_t bytes, int root, const std::string& what);

  // MPI_Finalize, once, when MPI was initialised (no-op otherwise).
  static void finalize();

 private:
  int rank_ = 0, size_ = 1;
  double timeout_ = 300;
};

}  // namespace gattn::dist
