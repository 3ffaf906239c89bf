#include "framework/dist/gradient_backend.h"

#include "framework/dist/mpi_communicator.h"
#include "framework/dist/nccl_communicator.h"
#include "framework/dist/single_communicator.h"
#include "framework/dist/staged_communicator.h"

namespace gattn::dist {

GradientBackendChoice choose_gradient_backend(const GradientBackendInputs& in) {
  GradientBackendChoice out;
  const bool own_gpu = in.local_size <= in.gpus;
  if (in.device == Device::cpu) {
    if (in.requested == "nccl") out.problem = "dist.backend 'nccl' needs device cuda (NCCL moves device buffers)";
    return out;  // host: MPI or a world of one over host buffers
  }
  if (in.requested == "nccl") {
    if (!in.nccl_built) {
      out.problem = "dist.backend 'nccl': this build has no NCCL; use mpi or auto";
    } else if (!own_gpu) {
      out.problem = "dist.backend 'nccl': " + std::to_string(in.local_size) + " ranks on this node but " +
                    std::to_string(in.gpus) +
                    " GPU(s); NCCL needs a GPU per rank: start at most that many ranks per node, or use "
                    "dist.backend mpi to share GPUs";
    }
    out.backend = GradientBackend::nccl;
    return out;
  }
  if (in.requested == "mpi") {
    out.backend = in.world == 1 ? GradientBackend::host : GradientBackend::staged;
    return out;
  }
  // auto
  if (in.world == 1)
    out.backend = GradientBackend::host;
  else
    out.backend = in.nccl_built && own_gpu ? GradientBackend::nccl : GradientBackend::staged;
  return out;
}

std::unique_ptr<Communicator> make_gradient_communicator(GradientBackend backend, Device device, Communicator& host,
                                                         const LaunchInfo& launch) {
  switch (backend) {
    case GradientBackend::host: {
      if (device == Device::cpu) return nullptr;
      if (host.size() > 1) throw DistError("dist: device buffers across ranks need the nccl or the staged backend");
      // One GPU alone: the world of one, copying device buffers (ZeRO-1's gathers are copies).
      auto single = std::make_unique<SingleCommunicator>(device);
      single->set_timeout(host.timeout());
      return single;
    }
    case GradientBackend::nccl:
      return make_nccl_communicator(dynamic_cast<MpiCommunicator*>(&host), launch, host.timeout());
    case GradientBackend::staged:
      return std::make_unique<StagedCommunicator>(host, device);
  }
  return nullptr;
}

}  // namespace gattn::dist
