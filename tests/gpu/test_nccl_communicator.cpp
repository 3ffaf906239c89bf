// The NCCL communicator on a real device: all-reduce (sum, max), broadcast, reduce-scatter,
// all-gather and barrier over device buffers, with values that depend on the rank so the same
// test checks any world size. Alone it is a world of one without MPI; under
// `mpirun -n N build/tests/gattn_gpu_tests --gtest_filter='NcclCommunicator.*'` (one GPU per rank)
// the ncclUniqueId travels over MPI. Skips without a device.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "framework/cuda/device.h"
#include "framework/dist/launch_env.h"
#include "framework/dist/mpi_communicator.h"
#include "framework/dist/nccl_communicator.h"
#include "framework/tensor/tensor.h"
#include "ops/cuda/runtime_info.h"

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
#define GATTN_REQUIRE_NCCL_DEVICE()                                          \
  do {                                                                       \
    if (!cuda::compiled_in()) GTEST_SKIP() << "built without CUDA";          \
    GATTN_SKIP_WITHOUT_NCCL();                                               \
    if (!cuda::available()) GTEST_SKIP() << "no CUDA device";                \
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

TEST(NcclCommunicator, WrongDeviceTensorIsRefused) {
  GATTN_REQUIRE_NCCL_DEVICE();
  NcclWorld world = make_world();
  Tensor host = Tensor::zeros({4}, DType::f32);
  EXPECT_THROW(world.nccl->all_reduce(host, dist::ReduceOp::sum, "host tensor"), DistError);
}

}  // namespace
}  // namespace gattn
