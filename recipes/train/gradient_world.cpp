#include "recipes/train/gradient_world.h"

#include <algorithm>

#include "core/cuda/device.h"
#include "framework/config/errors.h"

namespace gattn::recipes {

dist::GradientBackendInputs gradient_backend_inputs(const Config& cfg, Device device, int world) {
  dist::GradientBackendInputs in;
  in.requested = cfg.get_string("dist.backend");
  in.device = device;
  in.world = world;
  in.local_size = dist::world_launch().local_size;
  in.gpus = cuda::device_count();
#ifdef GATTN_WITH_NCCL
  in.nccl_built = true;
#endif
  return in;
}

dist::GradientBackend checked_gradient_backend(const Config& cfg, const dist::GradientBackendInputs& in) {
  const dist::GradientBackendChoice choice = dist::choose_gradient_backend(in);
  if (!choice.problem.empty()) throw ConfigError(cfg.where("dist.backend") + ": " + choice.problem);
  const std::string sync = dist::gradient_sync_problem(static_cast<int>(cfg.get_int("dist.zero")), gradient_sync(cfg));
  if (!sync.empty()) throw ConfigError(cfg.where("dist.grad_dtype") + ": " + sync);
  return choice.backend;
}

dist::GradientSync gradient_sync(const Config& cfg) {
  dist::GradientSync sync;
  sync.wire_dtype = cfg.get_string("dist.grad_dtype") == "bf16" ? DType::bf16 : DType::f32;
  const double bytes = cfg.get_double("dist.bucket_mb") * 1024.0 * 1024.0;
  sync.bucket_elements = std::max<std::int64_t>(
      1, static_cast<std::int64_t>(bytes) / static_cast<std::int64_t>(dtype_size(sync.wire_dtype)));
  return sync;
}

std::unique_ptr<dist::Communicator> make_gradient_world(const Config& cfg, Device device, dist::Communicator& host) {
  const dist::GradientBackend backend =
      checked_gradient_backend(cfg, gradient_backend_inputs(cfg, device, host.size()));
  return dist::make_gradient_communicator(backend, device, host, dist::world_launch());
}

}  // namespace gattn::recipes
