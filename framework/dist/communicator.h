// Communicator: the collectives data-parallel training needs, over buffers of one device. Three
// implementations: one process (no-ops and copies), MPI (host buffers: CPU training, and the
// bootstrap of NCCL) and NCCL (CUDA device buffers); the staged communicator carries device
// buffers over MPI through host copies (staged_communicator.h). Every collective is bounded by a timeout, so a
// peer that died or stalled ends the run with a DistError naming the collective instead of a hang.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor/dtype.h"
#include "core/tensor/tensor.h"
#include "framework/dist/errors.h"
#include "framework/dist/launch_env.h"

namespace gattn::dist {

enum class ReduceOp { sum, max, min };

// An operation in flight. wait() returns once it has completed on this rank (NCCL: once the
// compute stream is ordered after it) or throws DistError when the timeout passes first.
class Work {
 public:
  virtual ~Work() = default;
  virtual void wait() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend() const = 0;  // "single", "mpi", "nccl" or "mpi-staged"
  virtual Device device() const = 0;        // where the buffers of its collectives live
  // How long a collective may wait for its peers (dist.timeout_s) before it throws DistError.
  virtual void set_timeout(double seconds) = 0;
  virtual double timeout() const = 0;

  // `what` names the collective in error messages ("all-reduce of gradient bucket 2").
  // In place over `count` elements at `data`; non-blocking where the backend allows.
  virtual std::unique_ptr<Work> all_reduce_async(void* data, std::int64_t count, DType dtype, ReduceOp op,
                                                 const std::string& what) = 0;
  // `count` elements at `data` on every rank become root's.
  virtual void broadcast(void* data, std::int64_t count, DType dtype, int root, const std::string& what) = 0;
  // `send` holds size()·recv_count elements; rank r receives the reduction of every rank's block r.
  virtual void reduce_scatter(const void* send, void* recv, std::int64_t recv_count, DType dtype, ReduceOp op,
                              const std::string& what) = 0;
  // `recv` (size()·send_count elements) receives every rank's `send` block in rank order.
  virtual void all_gather(const void* send, void* recv, std::int64_t send_count, DType dtype,
                          const std::string& what) = 0;
  virtual void barrier(const std::string& what) = 0;

  void all_reduce(void* data, std::int64_t count, DType dtype, ReduceOp op, const std::string& what) {
    all_reduce_async(data, count, dtype, op, what)->wait();
  }
  // Host values reduced across ranks (a host copy for device backends): losses, counters, flags.
  std::vector<double> all_reduce_host(std::vector<double> values, ReduceOp op, const std::string& what);
  // A contiguous tensor on this communicator's device, reduced in place.
  void all_reduce(Tensor& t, ReduceOp op, const std::string& what);
  void broadcast(Tensor& t, int root, const std::string& what);
};

// The process's communicator for CPU tensors: MPI when a launcher started this process (MPI is
// initialised on first call, finalised by finalize_world()), else a world of one without MPI.
Communicator& cpu_world();
// The launch the world was built from (launch_env.h), valid after cpu_world().
const LaunchInfo& world_launch();
// Ends MPI cleanly after a successful run (a barrier first, so no rank leaves while another still
// needs it). Not called on the error path: a rank that exits without it makes mpirun stop the job.
void finalize_world();

}  // namespace gattn::dist
