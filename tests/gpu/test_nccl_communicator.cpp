// The NCCL communicator on a real device: all-reduce (sum, max), broadcast, reduce-scatter,
// all-gather and barrier over device buffers, with values that depend on the rank so the same
// test checks any world size. Alone it is a world of one without MPI; under
// `mpirun -n N build/tests/gattn_gpu_tests --gtest_filter='NcclCommunicator.*'` (one GPU per rank)
// the ncclUniqueId travels over MPI. Skips without a device.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "core/cuda/device.h"
#include "core/tensor/random.h"
#include "core/tensor/tensor.h"
#include "framework/dist/launch_env.h"
#include "framework/dist/mpi_communicator.h"
#include "framework/dist/nccl_communicator.h"
#include "framework/dist/zero_adamw.h"
#include "framework/optim/adamw.h"
#include "ops/cuda/runtime_info.h"
#include "test_util.h"

namespace gattn {
namespace {

// MPI, when a launcher started the test, ends cleanly after the last test (mpirun counts a rank
// that exits without MPI_Finalize as failed).
class MpiFinalizer : public ::testing::Environment {
 public:
  void TearDown() override { dist::MpiCommunicator::finalize(); }
};
const auto* const kFinalizer = ::testing::AddGlobalTestEnvironment(new MpiFinalizer);

// Skips, saying why, without CUDA, without NCCL in the build, or without a device.
#ifdef GATTN_WITH_NCCL
#define GATTN_SKIP_WITHOUT_NCCL() (void)0
#else
#define GATTN_SKIP_WITHOUT_NCCL() GTEST_SKIP() << "built without NCCL"
#endif
#define GATTN_REQUIRE_NCCL_DEVICE()                                 \
  do {                                                              \
    if (!cuda::compiled_in()) GTEST_SKIP() << "built without CUDA"; \
    GATTN_SKIP_WITHOUT_NCCL();                                      \
    if (!cuda::available()) GTEST_SKIP() << "no CUDA device";       \
  } while (0)

struct NcclWorld {
  std::unique_ptr<dist::MpiCommunicator> mpi;
  std::unique_ptr<dist::Communicator> nccl;
};

NcclWorld make_world() {
  NcclWorld w;
  const dist::LaunchInfo launch = dist::detect_launch();
  if (launch.launched) w.mpi = std::make_unique<dist::MpiCommunicator>();
  w.nccl = dist::make_nccl_communicator(w.mpi.get(), launch, /*timeout_s=*/60);
  return w;
}

Tensor on_device(const std::vector<double>& v) {
  return Tensor::from(v, {static_cast<std::int64_t>(v.size())}, DType::f32).to(Device::cuda);
}

TEST(NcclCommunicator, CollectivesOverDeviceBuffers) {
  GATTN_REQUIRE_NCCL_DEVICE();
  NcclWorld world = make_world();
  dist::Communicator& comm = *world.nccl;
  const int n = comm.size(), r = comm.rank();
  EXPECT_EQ(comm.backend(), "nccl");
  EXPECT_EQ(comm.device(), Device::cuda);

  // all-reduce sum: rank r holds r + 1 + i, the sum is n(n+1)/2 + n·i.
  constexpr std::int64_t kLen = 1000;
  std::vector<double> mine(kLen);
  for (std::int64_t i = 0; i < kLen; ++i) mine[static_cast<std::size_t>(i)] = r + 1 + static_cast<double>(i);
  Tensor buf = on_device(mine);
  comm.all_reduce(buf, dist::ReduceOp::sum, "test all-reduce");
  std::vector<double> got = buf.to_vector();
  for (std::int64_t i = 0; i < kLen; ++i)
    ASSERT_DOUBLE_EQ(got[static_cast<std::size_t>(i)], n * (n + 1) / 2.0 + n * static_cast<double>(i)) << i;

  // max, through the asynchronous form
  Tensor m = on_device({static_cast<double>(r), -static_cast<double>(r)});
  comm.all_reduce_async(m.raw_data(), 2, DType::f32, dist::ReduceOp::max, "test max")->wait();
  EXPECT_EQ(m.to_vector(), (std::vector<double>{n - 1.0, 0.0}));

  // broadcast from rank 0
  Tensor b = on_device({r == 0 ? 42.0 : -1.0, r == 0 ? 7.0 : -1.0});
  comm.broadcast(b, 0, "test broadcast");
  EXPECT_EQ(b.to_vector(), (std::vector<double>{42.0, 7.0}));

  // reduce-scatter: block k of every rank holds k + r; rank r receives Σ_q (r + q) = n·r + n(n−1)/2.
  constexpr std::int64_t kBlock = 3;
  std::vector<double> blocks;
  for (int k = 0; k < n; ++k)
    for (std::int64_t j = 0; j < kBlock; ++j) blocks.push_back(k + r);
  Tensor send = on_device(blocks);
  Tensor recv = Tensor::zeros({kBlock}, DType::f32, Device::cuda);
  comm.reduce_scatter(send.raw_data(), recv.raw_data(), kBlock, DType::f32, dist::ReduceOp::sum, "test reduce-scatter");
  for (double v : recv.to_vector()) EXPECT_DOUBLE_EQ(v, n * r + n * (n - 1) / 2.0);

  // all-gather: rank q contributes (q, q); everyone gets 0 0 1 1 ... n−1 n−1.
  Tensor part = on_device({static_cast<double>(r), static_cast<double>(r)});
  Tensor all = Tensor::zeros({2 * n}, DType::f32, Device::cuda);
  comm.all_gather(part.raw_data(), all.raw_data(), 2, DType::f32, "test all-gather");
  const std::vector<double> gathered = all.to_vector();
  for (int q = 0; q < n; ++q) {
    EXPECT_EQ(gathered[static_cast<std::size_t>(2 * q)], q);
    EXPECT_EQ(gathered[static_cast<std::size_t>(2 * q + 1)], q);
  }

  comm.barrier("test barrier");
  // Host values (losses, flags) go through a device copy.
  EXPECT_EQ(comm.all_reduce_host({1.0, static_cast<double>(r)}, dist::ReduceOp::sum, "test host")[0], n);
}

// ZeRO-1 over device buffers: its flat gradient buffer, padding and mean are tensor ops (they used
// to be host loops over data<float>(), which refuse CUDA tensors). Every rank's gradient is the
// same, so the mean is that gradient and the result is one CPU AdamW's.
TEST(NcclCommunicator, ZeroAdamWOnDeviceBuffersMatchesTheCpuAdamW) {
  GATTN_REQUIRE_NCCL_DEVICE();
  NcclWorld world = make_world();
  optim::AdamWOptions o;
  o.lr = 1e-2;
  o.schedule.kind = "constant";
  o.weight_decay = 0.1;
  o.grad_clip = 0.5;
  const std::vector<std::pair<std::string, Shape>> shapes = {{"w", {13, 7}},
                                                             {"b", {5}}};  // 96 elements: padding for most worlds
  optim::AdamW::NamedParameters cpu_params, gpu_params;
  std::uint64_t seed = 500;
  for (const auto& [name, shape] : shapes) {
    const Tensor p = test::rand(shape, ++seed, -1.0, 1.0, DType::f32);
    cpu_params.emplace_back(name, p.clone());
    gpu_params.emplace_back(name, p.to(Device::cuda).detach());
  }
  optim::AdamW cpu_opt(cpu_params, o);
  dist::ZeroAdamW zero(gpu_params, o, *world.nccl);
  for (std::int64_t step = 0; step < 3; ++step) {
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      const Tensor g =
          test::rand(shapes[i].second, 600 + static_cast<std::uint64_t>(step * 10 + i), -1.0, 1.0, DType::f32);
      cpu_params[i].second.set_grad(g.clone());
      gpu_params[i].second.set_grad(g.to(Device::cuda));
    }
    cpu_opt.clip_grad_norm();
    cpu_opt.step(step);
    zero.reduce_scatter_gradients();
    zero.clip_grad_norm();
    zero.step(step);
    for (std::size_t i = 0; i < shapes.size(); ++i)
      EXPECT_TRUE(test::all_close(gpu_params[i].second, cpu_params[i].second, 1e-6, 1e-5))
          << shapes[i].first << " step " << step;
  }
}

TEST(NcclCommunicator, WrongDeviceTensorIsRefused) {
  GATTN_REQUIRE_NCCL_DEVICE();
  NcclWorld world = make_world();
  Tensor host = Tensor::zeros({4}, DType::f32);
  EXPECT_THROW(world.nccl->all_reduce(host, dist::ReduceOp::sum, "host tensor"), DistError);
}

}  // namespace
}  // namespace gattn
