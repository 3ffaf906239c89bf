// The communicator that carries a training run's gradients and weights, chosen from dist.backend,
// the device and this node's GPUs (framework/dist/gradient_backend.h), and how zero 0's buckets
// travel (dist.bucket_mb, dist.grad_dtype). A request the job cannot meet (nccl with more ranks
// than GPUs on a node, bf16 buckets under ZeRO-1) is a ConfigError naming the key.
#pragma once
#include <memory>

#include "framework/dist/communicator.h"
#include "framework/dist/distributed_optimizer.h"
#include "framework/dist/gradient_backend.h"
#include "recipes/common/run_config.h"

namespace gattn::recipes {

// The inputs of the choice for this process (its launch, the visible GPUs, the build).
dist::GradientBackendInputs gradient_backend_inputs(const Config& cfg, Device device, int world);
// The choice; ConfigError at dist.backend (or dist.grad_dtype) when it cannot be met.
dist::GradientBackend checked_gradient_backend(const Config& cfg, const dist::GradientBackendInputs& in);
// dist.bucket_mb and dist.grad_dtype as the optimizer takes them.
dist::GradientSync gradient_sync(const Config& cfg);

// The communicator for the gradients: nullptr means the host world itself (CPU training).
// Collective: every rank calls it at the same point.
std::unique_ptr<dist::Communicator> make_gradient_world(const Config& cfg, Device device, dist::Communicator& host);

}  // namespace gattn::recipes
