// The staged communicator (framework/dist/staged_communicator.h) over CPU buffers: every collective
// staged through its host buffers at world sizes 1-3 (thread_world.h) gives the host
// communicator's own results, f32 and bf16, with all-reduces in flight together; its staging
// buffers are reused over steps; the host's errors pass through unchanged. Also the bf16 reduction
// arithmetic MpiCommunicator's user ops apply (bf16_reduce.h), and the pool on its own.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/cuda/device.h"
#include "framework/dist/bf16_reduce.h"
#include "framework/dist/single_communicator.h"
#include "framework/dist/staged_communicator.h"
#include "framework/dist/staging_pool.h"
#include "thread_world.h"

namespace gattn {
namespace {

using dist::ReduceOp;

// ---- bf16 arithmetic ----

bf16 b(float f) { return float_to_bf16(f); }
float f(bf16 h) { return bf16_to_float(h); }

TEST(Bf16Combine, SumRoundsOnceToNearestEven) {
  EXPECT_EQ(f(dist::bf16_combine(b(1.0f), b(2.0f), ReduceOp::sum)), 3.0f);
  // bf16 keeps 8 significant bits: 1 + 2^-8 is halfway between 1 and 1 + 2^-7, ties go to even (1).
  EXPECT_EQ(f(dist::bf16_combine(b(1.0f), b(std::ldexp(1.0f, -8)), ReduceOp::sum)), 1.0f);
  // 1 + 2^-7 + 2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even): up.
  EXPECT_EQ(f(dist::bf16_combine(b(1.0f + std::ldexp(1.0f, -7)), b(std::ldexp(1.0f, -8)), ReduceOp::sum)),
            1.0f + std::ldexp(1.0f, -6));
  // Exactly what the tensor core's conversion gives for the f32 sum.
  for (float x : {0.1f, -3.7f, 1e-3f, 250.0f})
    for (float y : {0.3f, 7.1f, -1e-3f, 1e30f}) {
      const float expect = f(float_to_bf16(f(b(x)) + f(b(y))));
      EXPECT_EQ(f(dist::bf16_combine(b(x), b(y), ReduceOp::sum)), expect) << x << " + " << y;
    }
}

TEST(Bf16Combine, MaxMinAndNaNAreCommutative) {
  EXPECT_EQ(f(dist::bf16_combine(b(-2.0f), b(5.0f), ReduceOp::max)), 5.0f);
  EXPECT_EQ(f(dist::bf16_combine(b(-2.0f), b(5.0f), ReduceOp::min)), -2.0f);
  const bf16 nan = b(std::numeric_limits<float>::quiet_NaN());
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min}) {
    EXPECT_TRUE(std::isnan(f(dist::bf16_combine(nan, b(1.0f), op))));
    EXPECT_TRUE(std::isnan(f(dist::bf16_combine(b(1.0f), nan, op))));
  }
  const std::vector<float> values = {0.0f, -1.5f, 3.25f, 1e-20f, -7e5f, std::numeric_limits<float>::infinity()};
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min})
    for (float x : values)
      for (float y : values) {
        const bf16 xy = dist::bf16_combine(b(x), b(y), op), yx = dist::bf16_combine(b(y), b(x), op);
        EXPECT_TRUE(xy.bits == yx.bits || (std::isnan(f(xy)) && std::isnan(f(yx)))) << x << ", " << y;
      }
}

TEST(Bf16Combine, IntoCombinesElementwiseInPlace) {
  const std::vector<bf16> in = {b(1), b(2), b(3)};
  std::vector<bf16> inout = {b(10), b(-20), b(0.5f)};
  dist::bf16_combine_into(in.data(), inout.data(), 3, ReduceOp::sum);
  EXPECT_EQ(f(inout[0]), 11.0f);
  EXPECT_EQ(f(inout[1]), -18.0f);
  EXPECT_EQ(f(inout[2]), 3.5f);
}

// ---- the pool ----

TEST(StagingPool, ReusesTheSmallestFreeBufferThatFits) {
  dist::StagingPool pool(Device::cpu);
  auto a = pool.acquire(10000);
  auto c = pool.acquire(100);
  void* a_data = a->data();
  EXPECT_GE(a->capacity(), 10000u);
  EXPECT_EQ(pool.allocations(), 2);
  a.give_back();
  c.give_back();
  EXPECT_EQ(pool.free_buffers(), 2u);
  auto again = pool.acquire(9000);  // the 10000-byte buffer, not a new one
  EXPECT_EQ(again->data(), a_data);
  auto small = pool.acquire(50);  // the 100-byte one (a page)
  EXPECT_EQ(pool.allocations(), 2);
  auto big = pool.acquire(1 << 20);  // nothing that large is free
  EXPECT_EQ(pool.allocations(), 3);
  again.give_back();
  small.give_back();
  big.give_back();
  EXPECT_EQ(pool.free_buffers(), 3u);
}

TEST(StagingPool, ALeaseDroppedWithoutGiveBackIsNotReused) {
  dist::StagingPool pool(Device::cpu);
  { auto lost = pool.acquire(64); }
  EXPECT_EQ(pool.free_buffers(), 0u);
  auto next = pool.acquire(64);
  EXPECT_EQ(pool.allocations(), 2);
  next.give_back();
}

// ---- the communicator over a world of threads ----

// Rank r's values: distinct per rank and element, exact in bf16 (multiples of 1/4 below 64) so
// that a sum's rounding is the only rounding, and negative ones so max and min differ from sum.
std::vector<double> values_of(int rank, std::int64_t n, int salt = 0) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    v[static_cast<std::size_t>(i)] = ((rank * 7 + i * 3 + salt * 5) % 29 - 14) * 0.25 + (i % 3 == 0 ? 0.0 : 0.125);
  return v;
}

// Bytes of `n` elements of `dtype` holding `values`.
std::vector<std::byte> buffer_of(const std::vector<double>& values, DType dtype) {
  std::vector<std::byte> out(values.size() * dtype_size(dtype));
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::f32) {
      const float x = static_cast<float>(values[i]);
      std::memcpy(out.data() + 4 * i, &x, 4);
    } else {
      const bf16 x = float_to_bf16(static_cast<float>(values[i]));
      std::memcpy(out.data() + 2 * i, &x, 2);
    }
  }
  return out;
}

struct WorldCase {
  int world;
  DType dtype;
};

class StagedOverThreads : public ::testing::TestWithParam<WorldCase> {};

TEST_P(StagedOverThreads, AllReduceMatchesTheHost) {
  const auto [world, dtype] = GetParam();
  testing::ThreadWorld threads(world);
  threads.run([dtype](dist::Communicator& host) {
    dist::StagedCommunicator staged(host, Device::cpu);
    EXPECT_EQ(staged.rank(), host.rank());
    EXPECT_EQ(staged.size(), host.size());
    EXPECT_EQ(staged.backend(), "threads-staged");
    EXPECT_EQ(staged.device(), Device::cpu);
    constexpr std::int64_t kN = 37;
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min}) {
      auto expect = buffer_of(values_of(host.rank(), kN), dtype);
      auto got = expect;
      host.all_reduce(expect.data(), kN, dtype, op, "host all-reduce");
      staged.all_reduce(got.data(), kN, dtype, op, "staged all-reduce");
      EXPECT_EQ(got, expect);
    }
  });
}

TEST_P(StagedOverThreads, TwoAllReducesInFlightWaitedInReverse) {
  const auto [world, dtype] = GetParam();
  testing::ThreadWorld threads(world);
  threads.run([dtype](dist::Communicator& host) {
    dist::StagedCommunicator staged(host, Device::cpu);
    const std::int64_t n0 = 1000, n1 = 3;
    auto expect0 = buffer_of(values_of(host.rank(), n0, 1), dtype);
    auto expect1 = buffer_of(values_of(host.rank(), n1, 2), dtype);
    auto got0 = expect0, got1 = expect1;
    host.all_reduce(expect0.data(), n0, dtype, ReduceOp::sum, "host bucket 0");
    host.all_reduce(expect1.data(), n1, dtype, ReduceOp::sum, "host bucket 1");
    auto w0 = staged.all_reduce_async(got0.data(), n0, dtype, ReduceOp::sum, "bucket 0");
    auto w1 = staged.all_reduce_async(got1.data(), n1, dtype, ReduceOp::sum, "bucket 1");
    w1->wait();
    w0->wait();
    w0->wait();  // waiting twice is harmless
    EXPECT_EQ(got0, expect0);
    EXPECT_EQ(got1, expect1);
  });
}

TEST_P(StagedOverThreads, BroadcastFromEveryRoot) {
  const auto [world, dtype] = GetParam();
  testing::ThreadWorld threads(world);
  threads.run([dtype, world](dist::Communicator& host) {
    dist::StagedCommunicator staged(host, Device::cpu);
    constexpr std::int64_t kN = 11;
    for (int root = 0; root < world; ++root) {
      auto got = buffer_of(values_of(host.rank(), kN), dtype);
      staged.broadcast(got.data(), kN, dtype, root, "broadcast");
      EXPECT_EQ(got, buffer_of(values_of(root, kN), dtype)) << "root " << root;
    }
  });
}

TEST_P(StagedOverThreads, ReduceScatterAndAllGatherMatchTheHost) {
  const auto [world, dtype] = GetParam();
  testing::ThreadWorld threads(world);
  threads.run([dtype, world](dist::Communicator& host) {
    dist::StagedCommunicator staged(host, Device::cpu);
    constexpr std::int64_t kBlock = 5;
    const std::size_t block_bytes = kBlock * dtype_size(dtype);
    const auto send = buffer_of(values_of(host.rank(), kBlock * world), dtype);

    std::vector<std::byte> expect(block_bytes), got(block_bytes);
    host.reduce_scatter(send.data(), expect.data(), kBlock, dtype, ReduceOp::sum, "host reduce-scatter");
    staged.reduce_scatter(send.data(), got.data(), kBlock, dtype, ReduceOp::sum, "reduce-scatter");
    EXPECT_EQ(got, expect);

    std::vector<std::byte> gathered(block_bytes * static_cast<std::size_t>(world));
    std::vector<std::byte> host_gathered(gathered.size());
    host.all_gather(got.data(), host_gathered.data(), kBlock, dtype, "host all-gather");
    staged.all_gather(got.data(), gathered.data(), kBlock, dtype, "all-gather");
    EXPECT_EQ(gathered, host_gathered);

    // In place, as ZeRO-1 calls them: the recv block inside send, the send block inside recv.
    auto in_place = send;
    std::byte* mine = in_place.data() + block_bytes * static_cast<std::size_t>(host.rank());
    staged.reduce_scatter(in_place.data(), mine, kBlock, dtype, ReduceOp::sum, "in-place reduce-scatter");
    EXPECT_EQ(std::vector<std::byte>(mine, mine + block_bytes), expect);
    staged.all_gather(mine, in_place.data(), kBlock, dtype, "in-place all-gather");
    EXPECT_EQ(in_place, host_gathered);
  });
}

TEST_P(StagedOverThreads, StagingBuffersAreReusedOverSteps) {
  const auto [world, dtype] = GetParam();
  testing::ThreadWorld threads(world);
  threads.run([dtype, world](dist::Communicator& host) {
    dist::StagedCommunicator staged(host, Device::cpu);
    // A step as the trainer's: three buckets in flight, a small all-reduce of losses, then
    // ZeRO-1's reduce-scatter and all-gather and a broadcast.
    const std::vector<std::int64_t> buckets = {4096, 1500, 7};
    auto grads = buffer_of(values_of(host.rank(), 4096 * 3), dtype);
    std::vector<std::byte> shard(grads.size() / static_cast<std::size_t>(world) + 64);
    auto step = [&] {
      std::vector<std::unique_ptr<dist::Work>> inflight;
      std::size_t offset = 0;
      for (std::int64_t n : buckets) {
        inflight.push_back(staged.all_reduce_async(grads.data() + offset, n, dtype, ReduceOp::sum, "bucket"));
        offset += static_cast<std::size_t>(n) * dtype_size(dtype);
      }
      for (auto& w : inflight) w->wait();
      std::vector<double> loss = staged.all_reduce_host({1.0, 2.0}, ReduceOp::sum, "loss");
      EXPECT_EQ(loss[1], 2.0 * world);
      const std::int64_t per_rank = 1000;
      staged.reduce_scatter(grads.data(), shard.data(), per_rank, dtype, ReduceOp::sum, "reduce-scatter");
      staged.all_gather(shard.data(), grads.data(), per_rank, dtype, "all-gather");
      staged.broadcast(grads.data(), 10, dtype, 0, "broadcast");
    };
    step();
    const std::int64_t warm = staged.staging_allocations();
    EXPECT_GT(warm, 0);
    for (int i = 0; i < 5; ++i) step();
    EXPECT_EQ(staged.staging_allocations(), warm);
  });
}

std::string case_name(const ::testing::TestParamInfo<WorldCase>& info) {
  return "world" + std::to_string(info.param.world) + "_" + dtype_name(info.param.dtype);
}

INSTANTIATE_TEST_SUITE_P(WorldsAndDTypes, StagedOverThreads,
                         ::testing::Values(WorldCase{1, DType::f32}, WorldCase{2, DType::f32}, WorldCase{3, DType::f32},
                                           WorldCase{1, DType::bf16}, WorldCase{2, DType::bf16},
                                           WorldCase{3, DType::bf16}),
                         case_name);

// ---- forwarding and errors, over fakes ----

// A world of one whose all-reduce completes only in wait() (doubling the values, so the copy back
// shows), and whose collectives can be made to fail as a peer's timeout would.
class FakeHost final : public dist::Communicator {
 public:
  bool fail = false;
  std::vector<const void*> seen;  // buffers the host was given
  double timeout_s = 1;

  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backend() const override { return "fake"; }
  Device device() const override { return Device::cpu; }
  void set_timeout(double seconds) override { timeout_s = seconds; }
  double timeout() const override { return timeout_s; }

  std::unique_ptr<dist::Work> all_reduce_async(void* data, std::int64_t count, DType, ReduceOp,
                                               const std::string& what) override {
    seen.push_back(data);
    return std::make_unique<DoubleOnWait>(static_cast<float*>(data), count, fail, what);
  }
  using dist::Communicator::broadcast;
  void broadcast(void* data, std::int64_t, DType, int, const std::string& what) override {
    seen.push_back(data);
    if (fail) throw DistError("dist: " + what + " did not complete within 1 s (dist.timeout_s)");
  }
  void reduce_scatter(const void*, void*, std::int64_t, DType, ReduceOp, const std::string&) override {}
  void all_gather(const void*, void*, std::int64_t, DType, const std::string&) override {}
  void barrier(const std::string& what) override {
    if (fail) throw DistError("dist: " + what + " failed");
  }

 private:
  struct DoubleOnWait : dist::Work {
    DoubleOnWait(float* data, std::int64_t count, bool failing, std::string name)
        : p(data), n(count), fail(failing), what(std::move(name)) {}
    void wait() override {
      if (fail) throw DistError("dist: " + what + " did not complete within 1 s (dist.timeout_s)");
      for (std::int64_t i = 0; i < n; ++i) p[i] *= 2;
    }
    float* p;
    std::int64_t n;
    bool fail;
    std::string what;
  };
};

TEST(StagedCommunicator, ForwardsToTheHostAndCopiesBackOnWait) {
  FakeHost host;
  dist::StagedCommunicator staged(host, Device::cpu);
  EXPECT_EQ(staged.backend(), "fake-staged");
  staged.set_timeout(42);
  EXPECT_EQ(host.timeout(), 42);
  EXPECT_EQ(staged.timeout(), 42);

  std::vector<float> v{1, 2, 3};
  auto work = staged.all_reduce_async(v.data(), 3, DType::f32, ReduceOp::sum, "bucket");
  ASSERT_EQ(host.seen.size(), 1u);
  EXPECT_NE(host.seen[0], v.data());            // the host got a staging buffer
  EXPECT_EQ(v, (std::vector<float>{1, 2, 3}));  // nothing copied back before wait()
  work->wait();
  EXPECT_EQ(v, (std::vector<float>{2, 4, 6}));
  staged.barrier("barrier");
}

TEST(StagedCommunicator, TheHostsErrorsPassThroughUnchanged) {
  FakeHost host;
  dist::StagedCommunicator staged(host, Device::cpu);
  host.fail = true;
  std::vector<float> v{1, 2, 3};
  auto work = staged.all_reduce_async(v.data(), 3, DType::f32, ReduceOp::sum, "all-reduce of gradient bucket 2");
  try {
    work->wait();
    FAIL() << "no DistError";
  } catch (const DistError& e) {
    EXPECT_STREQ(e.what(), "dist: all-reduce of gradient bucket 2 did not complete within 1 s (dist.timeout_s)");
  }
  EXPECT_EQ(v, (std::vector<float>{1, 2, 3}));
  EXPECT_THROW(staged.broadcast(v.data(), 3, DType::f32, 0, "broadcast"), DistError);
  EXPECT_THROW(staged.barrier("barrier"), DistError);
  // The failed collectives' buffers are not reused: a peer may still write into them.
  host.fail = false;
  const std::int64_t before = staged.staging_allocations();
  staged.all_reduce(v.data(), 3, DType::f32, ReduceOp::sum, "after");
  EXPECT_EQ(staged.staging_allocations(), before + 1);
  EXPECT_EQ(v, (std::vector<float>{2, 4, 6}));
}

TEST(StagedCommunicator, NeedsAHostCommunicatorAndADeviceForCuda) {
  dist::SingleCommunicator device_world(Device::cuda);
  EXPECT_THROW({ dist::StagedCommunicator staged(device_world, Device::cpu); }, DistError);
  dist::SingleCommunicator host;
  if (!cuda::available()) {
    EXPECT_THROW({ dist::StagedCommunicator staged(host, Device::cuda); }, DeviceError);
  }
}

}  // namespace
}  // namespace gattn
