// NCCL over CUDA device buffers: the GPU path of data-parallel training. One GPU per process,
// chosen by its local rank; rank 0 creates the ncclUniqueId and MPI broadcasts it (the bootstrap),
// so the launch is the same mpirun / srun as on CPUs. Collectives run on a communication stream
// ordered after the compute stream (gradients are complete when a bucket starts) and their wait
// polls the stream and NCCL's async error with the dist.timeout_s deadline, aborting the NCCL
// communicator instead of hanging when a peer is gone.
#pragma once
#include <memory>

#include "framework/dist/communicator.h"
#include "framework/dist/launch_env.h"
#include "framework/dist/mpi_communicator.h"

namespace gattn::dist {

// `bootstrap` is the MPI world of a launched job, or nullptr for a world of one (no MPI needed).
// Selects device launch.local_rank (DistError when the node has fewer GPUs than ranks). Throws
// DeviceError in a build without CUDA or on a machine without a device.
std::unique_ptr<Communicator> make_nccl_communicator(MpiCommunicator* bootstrap, const LaunchInfo& launch,
                                                     double timeout_s = 300);

}  // namespace gattn::dist
