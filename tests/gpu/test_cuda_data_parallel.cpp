// The data-parallel optimizer on device parameters, as the trainer runs it where ranks share one GPU:
// two ranks as threads (tests/unit/thread_world.h), each with its parameters and gradients on the
// device and the staged communicator between them, against the same two ranks on host tensors.
// Gradient buckets (f32 and bf16 on the wire) give the host's means bit for bit; ZeRO-1's steps
// (reduce-scatter, clipping, the device AdamW kernel on the shard, all-gather) track the host's.
// Skip without a device.
#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor/tensor.h"
#include "cuda_test_util.h"
#include "framework/dist/distributed_optimizer.h"
#include "framework/dist/gradient_buckets.h"
#include "framework/dist/staged_communicator.h"
#include "unit/thread_world.h"

namespace gattn {
namespace {

using Params = std::vector<std::pair<std::string, Tensor>>;

// Four parameters of odd sizes; the same values on every rank and device.
Params make_params(Device device) {
  Params p;
  const std::vector<Shape> shapes = {{7, 5}, {13}, {3, 3, 3}, {1}};
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    Tensor t = test::rand(shapes[i], 100 + i, -1, 1, DType::f32).to(device);
    t.set_requires_grad(true);
    std::string name = "p";  // (not "p" + to_string: GCC 12 warns falsely, -Wrestrict)
    name += std::to_string(i);
    p.emplace_back(name, t);
  }
  return p;
}

// Rank r's gradient of parameter i at `step`: different per rank, parameter and step.
void set_grads(Params& params, int rank, int step) {
  for (std::size_t i = 0; i < params.size(); ++i) {
    Tensor& p = params[i].second;
    p.set_grad(test::rand(p.shape(),
                          1000 + 97 * static_cast<std::uint64_t>(rank) + 13 * i + 7 * static_cast<std::uint64_t>(step),
                          -2, 2, DType::f32)
                   .to(p.device()));
  }
}

std::vector<std::vector<double>> values(const Params& params, bool grads) {
  std::vector<std::vector<double>> out;
  for (const auto& [name, p] : params) out.push_back((grads ? p.grad() : p).to(Device::cpu).to_vector());
  return out;
}

TEST(CudaDataParallel, DeviceBucketsGiveTheHostsMeansBitForBit) {
  GATTN_REQUIRE_DEVICE();
  (void)Tensor::zeros({1}, DType::f32, Device::cuda);  // the compute stream, made before the threads
  for (DType wire : {DType::f32, DType::bf16}) {
    testing::ThreadWorld world(2);
    std::mutex mu;
    world.run([&](dist::Communicator& host) {
      Params on_host = make_params(Device::cpu), on_device = make_params(Device::cuda);
      dist::StagedCommunicator staged(host, Device::cuda);
      dist::GradientBuckets host_buckets(on_host, host, /*bucket_elements=*/16, wire);
      dist::GradientBuckets device_buckets(on_device, staged, /*bucket_elements=*/16, wire);
      for (int step = 0; step < 2; ++step) {
        set_grads(on_host, host.rank(), step);
        set_grads(on_device, host.rank(), step);
        host_buckets.finish();
        device_buckets.finish();
        std::lock_guard<std::mutex> lock(mu);
        EXPECT_EQ(values(on_device, true), values(on_host, true)) << dtype_name(wire) << " step " << step;
      }
    });
  }
}

TEST(CudaDataParallel, ZeroOneOnTheDeviceTracksTheHost) {
  GATTN_REQUIRE_DEVICE();
  (void)Tensor::zeros({1}, DType::f32, Device::cuda);
  testing::ThreadWorld world(2);
  std::mutex mu;
  world.run([&](dist::Communicator& host) {
    Params on_host = make_params(Device::cpu), on_device = make_params(Device::cuda);
    dist::StagedCommunicator staged(host, Device::cuda);
    optim::AdamWOptions options;
    options.lr = 1e-2;
    options.grad_clip = 0.5;  // the norm over both shards clips
    options.schedule.kind = "constant";
    dist::DistributedOptimizer host_opt(on_host, options, host, /*zero=*/1);
    dist::DistributedOptimizer device_opt(on_device, options, staged, /*zero=*/1);
    for (int step = 0; step < 3; ++step) {
      set_grads(on_host, host.rank(), step);
      set_grads(on_device, host.rank(), step);
      host_opt.average_gradients();
      device_opt.average_gradients();
      const double host_norm = host_opt.clip_grad_norm(), device_norm = device_opt.clip_grad_norm();
      EXPECT_NEAR(device_norm, host_norm, 1e-5 * host_norm);
      host_opt.step(step);
      device_opt.step(step);
      host_opt.zero_grad();
      device_opt.zero_grad();
    }
    // The checkpoint's gathered moments (a collective: every rank joins, before the lock below).
    const OptimizerSnapshot h = host_opt.state_for_checkpoint(), d = device_opt.state_for_checkpoint();
    std::lock_guard<std::mutex> lock(mu);
    const auto want = values(on_host, false), got = values(on_device, false);
    for (std::size_t i = 0; i < want.size(); ++i)
      for (std::size_t k = 0; k < want[i].size(); ++k)
        EXPECT_NEAR(got[i][k], want[i][k], 1e-6) << "p" << i << "[" << k << "]";
    ASSERT_EQ(h.size(), d.size());
    for (std::size_t i = 0; i < h.size(); ++i) {
      EXPECT_EQ(d[i].t, h[i].t);
      const auto hm = h[i].exp_avg_sq.to_vector(), dm = d[i].exp_avg_sq.to(Device::cpu).to_vector();
      for (std::size_t k = 0; k < hm.size(); ++k) EXPECT_NEAR(dm[k], hm[k], 1e-6 * hm[k] + 1e-12);
    }
  });
}

}  // namespace
}  // namespace gattn
