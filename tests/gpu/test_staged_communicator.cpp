// Collectives over CUDA buffers without NCCL: the staged communicator (pinned host buffers, a host
// communicator in between) over a world of one and over three ranks as threads sharing the device
// (tests/unit/thread_world.h), each result equal to the host communicator's on host copies, f32
// and bf16, and no new staging buffers in the steady state; and the single-process communicator's
// device copies (reduce-scatter and all-gather of a world of one, as ZeRO-1 on one GPU calls them).
// Skip without a device.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "core/tensor/tensor.h"
#include "cuda_test_util.h"
#include "framework/dist/single_communicator.h"
#include "framework/dist/staged_communicator.h"
#include "unit/thread_world.h"

namespace gattn {
namespace {

using dist::ReduceOp;

// Rank r's values, exact in bf16 (multiples of 1/8 below 4), distinct per rank and element.
std::vector<double> values_of(int rank, std::int64_t n, int salt = 0) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    v[static_cast<std::size_t>(i)] = ((rank * 7 + i * 3 + salt * 5) % 29 - 14) * 0.25 + (i % 3 == 0 ? 0.0 : 0.125);
  return v;
}

Tensor host_tensor(int rank, std::int64_t n, DType dtype, int salt = 0) {
  return Tensor::from(values_of(rank, n, salt), {n}, dtype);
}

// The bytes of a tensor of either device, for bit-exact comparison with a host buffer.
std::vector<std::byte> bytes_of(const Tensor& t) {
  const Tensor h = t.to(Device::cpu);
  const auto* p = static_cast<const std::byte*>(h.raw_data());
  return {p, p + static_cast<std::size_t>(h.numel()) * dtype_size(h.dtype())};
}

// Every collective on device tensors through `staged` and on host tensors through `host`, in the
// same order on every rank; the results must be the same bits. Returns the staging allocations
// after the first of `steps` rounds.
std::int64_t check_collectives(dist::Communicator& host, dist::StagedCommunicator& staged, DType dtype, int steps) {
  const int r = host.rank(), n = host.size();
  std::int64_t warm = 0;
  for (int step = 0; step < steps; ++step) {
    // Two all-reduces in flight, waited in reverse order.
    Tensor h0 = host_tensor(r, 1000, dtype, step), h1 = host_tensor(r, 3, dtype, step + 1);
    Tensor d0 = h0.to(Device::cuda), d1 = h1.to(Device::cuda);
    host.all_reduce(h0.raw_data(), h0.numel(), dtype, ReduceOp::sum, "host bucket 0");
    host.all_reduce(h1.raw_data(), h1.numel(), dtype, ReduceOp::max, "host bucket 1");
    auto w0 = staged.all_reduce_async(d0.raw_data(), d0.numel(), dtype, ReduceOp::sum, "bucket 0");
    auto w1 = staged.all_reduce_async(d1.raw_data(), d1.numel(), dtype, ReduceOp::max, "bucket 1");
    w1->wait();
    w0->wait();
    EXPECT_EQ(bytes_of(d0), bytes_of(h0));
    EXPECT_EQ(bytes_of(d1), bytes_of(h1));

    // Broadcast from the last rank.
    Tensor b = host_tensor(r, 17, dtype).to(Device::cuda);
    staged.broadcast(b, n - 1, "broadcast");
    EXPECT_EQ(bytes_of(b), bytes_of(host_tensor(n - 1, 17, dtype)));

    // Reduce-scatter, then all-gather of the shards.
    constexpr std::int64_t kBlock = 129;
    Tensor send_h = host_tensor(r, kBlock * n, dtype, 3), shard_h = Tensor::zeros({kBlock}, dtype);
    Tensor send_d = send_h.to(Device::cuda), shard_d = Tensor::zeros({kBlock}, dtype, Device::cuda);
    host.reduce_scatter(send_h.raw_data(), shard_h.raw_data(), kBlock, dtype, ReduceOp::sum, "host reduce-scatter");
    staged.reduce_scatter(send_d.raw_data(), shard_d.raw_data(), kBlock, dtype, ReduceOp::sum, "reduce-scatter");
    EXPECT_EQ(bytes_of(shard_d), bytes_of(shard_h));
    Tensor all_h = Tensor::zeros({kBlock * n}, dtype), all_d = Tensor::zeros({kBlock * n}, dtype, Device::cuda);
    host.all_gather(shard_h.raw_data(), all_h.raw_data(), kBlock, dtype, "host all-gather");
    staged.all_gather(shard_d.raw_data(), all_d.raw_data(), kBlock, dtype, "all-gather");
    EXPECT_EQ(bytes_of(all_d), bytes_of(all_h));
    if (step == 0) warm = staged.staging_allocations();
  }
  return warm;
}

TEST(CudaStagedCommunicator, CollectivesOverAWorldOfOne) {
  GATTN_REQUIRE_DEVICE();
  dist::SingleCommunicator host;
  dist::StagedCommunicator staged(host, Device::cuda);
  EXPECT_EQ(staged.backend(), "single-staged");
  EXPECT_EQ(staged.device(), Device::cuda);
  for (DType dtype : {DType::f32, DType::bf16}) {
    const std::int64_t warm = check_collectives(host, staged, dtype, 4);
    EXPECT_GT(warm, 0);
    EXPECT_EQ(staged.staging_allocations(), warm) << dtype_name(dtype);
  }
  // A CPU tensor given to a CUDA communicator is refused by name.
  Tensor cpu = Tensor::zeros({3});
  EXPECT_THROW(staged.all_reduce(cpu, ReduceOp::sum, "test"), DistError);
}

// Three ranks share the device, as three processes would share one GPU under MPI. The emulated
// runtime and the caching allocator are thread-safe, and the compute stream is shared, so the
// threads' copies interleave on it in some order (each waits for its own D2H copy).
TEST(CudaStagedCommunicator, CollectivesOfThreeRanksSharingTheDevice) {
  GATTN_REQUIRE_DEVICE();
  (void)Tensor::zeros({1}, DType::f32, Device::cuda);  // the compute stream, made before the threads
  testing::ThreadWorld world(3);
  world.run([](dist::Communicator& host) {
    dist::StagedCommunicator staged(host, Device::cuda);
    EXPECT_EQ(staged.size(), 3);
    for (DType dtype : {DType::f32, DType::bf16}) {
      const std::int64_t warm = check_collectives(host, staged, dtype, 3);
      EXPECT_EQ(staged.staging_allocations(), warm) << dtype_name(dtype);
    }
  });
}

TEST(CudaSingleCommunicator, CopiesDeviceBuffers) {
  GATTN_REQUIRE_DEVICE();
  dist::SingleCommunicator comm(Device::cuda);
  for (DType dtype : {DType::f32, DType::bf16}) {
    const Tensor values = host_tensor(0, 300, dtype);
    Tensor src = values.to(Device::cuda), dst = Tensor::zeros({300}, dtype, Device::cuda);
    comm.reduce_scatter(src.raw_data(), dst.raw_data(), 300, dtype, ReduceOp::sum, "reduce-scatter");
    EXPECT_EQ(bytes_of(dst), bytes_of(values));
    Tensor gathered = Tensor::zeros({300}, dtype, Device::cuda);
    comm.all_gather(dst.raw_data(), gathered.raw_data(), 300, dtype, "all-gather");
    EXPECT_EQ(bytes_of(gathered), bytes_of(values));
    // In place (ZeRO-1's all-gather of a world of one) and the all-reduce are the identity.
    comm.all_gather(gathered.raw_data(), gathered.raw_data(), 300, dtype, "in-place all-gather");
    comm.all_reduce(gathered, ReduceOp::sum, "all-reduce");
    comm.broadcast(gathered, 0, "broadcast");
    EXPECT_EQ(bytes_of(gathered), bytes_of(values));
  }
}

}  // namespace
}  // namespace gattn
