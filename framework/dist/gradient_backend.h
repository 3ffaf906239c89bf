// Which communicator carries a data-parallel run's gradients and weights (dist.backend), decided
// from the device, the world and this node's GPUs; and that communicator, made. The host world
// (framework/dist/communicator.h: MPI or a world of one) keeps carrying host values — losses,
// flags, barriers — whatever carries the gradients.
#pragma once
#include <memory>
#include <string>

#include "core/tensor/dtype.h"
#include "framework/dist/communicator.h"
#include "framework/dist/launch_env.h"

namespace gattn::dist {

enum class GradientBackend {
  host,    // the host world itself: CPU tensors (MPI or one process), or one GPU with nothing to exchange
  nccl,    // NCCL over device buffers: one GPU per rank
  staged,  // the host world over device buffers staged through pinned host memory: ranks may share a GPU
};

struct GradientBackendInputs {
  std::string requested = "auto";  // dist.backend: auto, nccl or mpi
  Device device = Device::cpu;     // where the parameters live
  int world = 1;                   // ranks in the job
  int local_size = 1;              // ranks on this node
  int gpus = 0;                    // devices this node's ranks see
  bool nccl_built = false;         // the build has NCCL
};

struct GradientBackendChoice {
  GradientBackend backend = GradientBackend::host;
  std::string problem;  // non-empty: the request cannot be met (a config error, the reason in one line)
};

// auto: NCCL for CUDA tensors where each rank on the node has its own GPU and the build has NCCL,
// the staged MPI path where ranks share GPUs (or NCCL is missing), the host world on the CPU or
// for one GPU alone. nccl and mpi force the one; nccl with more ranks than GPUs on a node is a
// problem (NCCL refuses two ranks on one device), as are nccl on the CPU and nccl in a build without it.
GradientBackendChoice choose_gradient_backend(const GradientBackendInputs& in);

// The communicator for `backend` over device `device`: nullptr for `host` (use the host world),
// else a new one (NCCL bootstrapped over the host world when it is MPI). Collective.
std::unique_ptr<Communicator> make_gradient_communicator(GradientBackend backend, Device device, Communicator& host,
                                                         const LaunchInfo& launch);

}  // namespace gattn::dist
