// The shared helpers of every communicator and the process's CPU world.
#include "framework/dist/communicator.h"

#include <memory>

#include "framework/dist/mpi_communicator.h"
#include "framework/dist/single_communicator.h"

namespace gattn::dist {

namespace {

void check_tensor(const Communicator& comm, const Tensor& t, const std::string& what) {
  if (!t.defined()) throw DistError("dist: " + what + ": undefined tensor");
  if (t.device() != comm.device())
    throw DistError("dist: " + what + ": a " + device_name(t.device()) + " tensor given to the " + comm.backend() +
                    " communicator, which works on " + device_name(comm.device()) + " buffers");
}

struct World {
  LaunchInfo launch;
  std::unique_ptr<Communicator> comm;
};

World& world() {
  static World w = [] {
    World out;
    out.launch = detect_launch();
    if (out.launch.launched)
      out.comm = std::make_unique<MpiCommunicator>();
    else
      out.comm = std::make_unique<SingleCommunicator>();
    return out;
  }();
  return w;
}

}  // namespace

std::vector<double> Communicator::all_reduce_host(std::vector<double> values, ReduceOp op, const std::string& what) {
  if (size() == 1 || values.empty()) return values;
  if (device() == Device::cpu) {
    all_reduce(values.data(), static_cast<std::int64_t>(values.size()), DType::f64, op, what);
    return values;
  }
  Tensor t = Tensor::from(values, {static_cast<std::int64_t>(values.size())}, DType::f64).to(device());
  all_reduce(t, op, what);
  return t.to_vector();
}

void Communicator::all_reduce(Tensor& t, ReduceOp op, const std::string& what) {
  check_tensor(*this, t, what);
  all_reduce(t.raw_data(), t.numel(), t.dtype(), op, what);
}

void Communicator::broadcast(Tensor& t, int root, const std::string& what) {
  check_tensor(*this, t, what);
  broadcast(t.raw_data(), t.numel(), t.dtype(), root, what);
}

Communicator& cpu_world() { return *world().comm; }

const LaunchInfo& world_launch() { return world().launch; }

void finalize_world() {
  World& w = world();
  if (!w.launch.launched) return;
  w.comm->barrier("the barrier before MPI_Finalize");
  MpiCommunicator::finalize();
}

}  // namespace gattn::dist
