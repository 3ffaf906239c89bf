// framework/dist: launcher detection from the environment, shard ranges, batch rows and bucket
// plans, the single-process communicator, and the data-parallel optimizers checked in a world of
// threads (thread_world.h) against one AdamW over the mean gradient: bucketed all-reduce (zero 0),
// ZeRO-1 at several world sizes with groups, freezing, decay and clipping, and its state gathered
// and re-sharded onto another world size.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/autograd/engine.h"
#include "core/tensor/random.h"
#include "framework/dist/distributed_optimizer.h"
#include "framework/dist/gradient_backend.h"
#include "framework/dist/gradient_buckets.h"
#include "framework/dist/launch_env.h"
#include "framework/dist/sharding.h"
#include "framework/dist/single_communicator.h"
#include "framework/dist/zero_adamw.h"
#include "framework/optim/adamw.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "thread_world.h"

namespace gattn {
namespace {

using dist::Range;

dist::LaunchInfo detect(const std::map<std::string, std::string>& env) {
  return dist::detect_launch([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(LaunchEnv, PlainProcessIsAWorldOfOne) {
  const dist::LaunchInfo info = detect({});
  EXPECT_FALSE(info.launched);
  EXPECT_EQ(info.size, 1);
  EXPECT_EQ(info.rank, 0);
}

TEST(LaunchEnv, OpenMpi) {
  const dist::LaunchInfo info = detect({{"OMPI_COMM_WORLD_SIZE", "4"},
                                        {"OMPI_COMM_WORLD_RANK", "3"},
                                        {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                        {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  EXPECT_TRUE(info.launched);
  EXPECT_EQ(info.launcher, "openmpi");
  EXPECT_EQ(info.size, 4);
  EXPECT_EQ(info.rank, 3);
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_EQ(info.local_size, 2);
}

TEST(LaunchEnv, PmiPmixAndSrun) {
  dist::LaunchInfo pmi =
      detect({{"PMI_SIZE", "8"}, {"PMI_RANK", "5"}, {"MPI_LOCALRANKID", "1"}, {"MPI_LOCALNRANKS", "4"}});
  EXPECT_EQ(pmi.launcher, "pmi");
  EXPECT_EQ(pmi.size, 8);
  EXPECT_EQ(pmi.rank, 5);
  EXPECT_EQ(pmi.local_rank, 1);
  EXPECT_EQ(pmi.local_size, 4);
  dist::LaunchInfo pmix = detect(
      {{"PMIX_RANK", "2"}, {"SLURM_STEP_NUM_TASKS", "16"}, {"SLURM_LOCALID", "2"}, {"SLURM_NTASKS_PER_NODE", "8"}});
  EXPECT_EQ(pmix.launcher, "pmix");
  EXPECT_EQ(pmix.size, 16);
  EXPECT_EQ(pmix.rank, 2);
  EXPECT_EQ(pmix.local_rank, 2);
  EXPECT_EQ(pmix.local_size, 8);
  dist::LaunchInfo srun = detect({{"SLURM_STEP_NUM_TASKS", "2"}, {"SLURM_PROCID", "1"}, {"SLURM_LOCALID", "0"}});
  EXPECT_EQ(srun.launcher, "slurm");
  EXPECT_EQ(srun.size, 2);
  EXPECT_EQ(srun.rank, 1);
}

TEST(LaunchEnv, BatchScriptWithoutSrunAndGarbageAreNotLaunches) {
  // sbatch sets SLURM_NTASKS and SLURM_PROCID for the batch script itself: still one process.
  EXPECT_FALSE(detect({{"SLURM_NTASKS", "4"}, {"SLURM_PROCID", "0"}, {"SLURM_JOB_ID", "77"}}).launched);
  EXPECT_FALSE(detect({{"OMPI_COMM_WORLD_SIZE", "two"}}).launched);
  EXPECT_FALSE(detect({{"PMI_SIZE", "-1"}}).launched);
  EXPECT_FALSE(detect({{"OMPI_COMM_WORLD_SIZE", ""}}).launched);
}

TEST(Sharding, ShardsCoverTheVectorDisjointly) {
  for (std::int64_t total : {0, 1, 5, 24, 25, 1000003})
    for (int world : {1, 2, 3, 7, 8}) {
      SCOPED_TRACE(std::to_string(total) + " over " + std::to_string(world));
      std::int64_t next = 0;
      for (int r = 0; r < world; ++r) {
        const Range s = dist::shard_of(total, world, r);
        EXPECT_EQ(s.begin, next);
        EXPECT_LE(s.size(), dist::shard_size(total, world));
        EXPECT_GE(s.size(), 0);
        next = s.end;
      }
      EXPECT_EQ(next, total);
    }
  EXPECT_EQ(dist::shard_of(25, 3, 2), (Range{18, 25}));
  EXPECT_EQ(dist::shard_of(2, 4, 3), (Range{2, 2}));  // more ranks than elements: trailing shards empty
  EXPECT_THROW(dist::shard_of(10, 2, 2), ValueError);
}

TEST(Sharding, OverlapAndBatchRows) {
  EXPECT_EQ(dist::overlap_local({10, 20}, {15, 30}), (Range{5, 10}));
  EXPECT_EQ(dist::overlap_local({10, 20}, {0, 12}), (Range{0, 2}));
  EXPECT_EQ(dist::overlap_local({10, 20}, {12, 14}), (Range{2, 4}));
  EXPECT_EQ(dist::overlap_local({10, 20}, {20, 30}).size(), 0);
  EXPECT_EQ(dist::batch_rows(4, 0), (Range{0, 4}));
  EXPECT_EQ(dist::batch_rows(4, 3), (Range{12, 16}));
}

TEST(Sharding, BucketsStartFromTheLastParameter) {
  const auto buckets = dist::plan_buckets({3, 4, 10, 2, 2, 1}, 4);
  // Backwards: {1,2,2} reach 5 >= 4 -> [3,4,5]; {10} -> [2]; {4} -> [1]; {3} left -> [0].
  ASSERT_EQ(buckets.size(), 4u);
  EXPECT_EQ(buckets[0], (std::vector<std::size_t>{3, 4, 5}));
  EXPECT_EQ(buckets[1], (std::vector<std::size_t>{2}));
  EXPECT_EQ(buckets[2], (std::vector<std::size_t>{1}));
  EXPECT_EQ(buckets[3], (std::vector<std::size_t>{0}));
  EXPECT_EQ(dist::plan_buckets({1, 1, 1}, 100).size(), 1u);
  EXPECT_TRUE(dist::plan_buckets({}, 4).empty());
  EXPECT_THROW(dist::plan_buckets({1}, 0), ValueError);
}

TEST(SingleCommunicator, CollectivesOfOneRank) {
  dist::SingleCommunicator comm;
  std::vector<float> v{1, 2, 3}, out(3);
  comm.all_reduce(v.data(), 3, DType::f32, dist::ReduceOp::sum, "test");
  EXPECT_EQ(v, (std::vector<float>{1, 2, 3}));
  comm.reduce_scatter(v.data(), out.data(), 3, DType::f32, dist::ReduceOp::sum, "test");
  EXPECT_EQ(out, v);
  comm.all_gather(v.data(), out.data(), 3, DType::f32, "test");
  EXPECT_EQ(out, v);
  EXPECT_THROW(comm.broadcast(v.data(), 3, DType::f32, 1, "test"), DistError);
  EXPECT_EQ(comm.all_reduce_host({2.5}, dist::ReduceOp::max, "test"), std::vector<double>{2.5});
}

// ---- the optimizers in a world of threads ----

// Parameters of awkward sizes (shards cut through them), names a group glob can pick.
std::vector<std::pair<std::string, Tensor>> make_params(std::uint64_t seed) {
  std::vector<std::pair<std::string, Tensor>> params;
  Generator gen(seed, 0);
  const std::vector<std::pair<std::string, Shape>> specs = {{"blocks.0.attn.gate.weight", {3, 3}},
                                                            {"blocks.0.attn.gate.bias", {3}},
                                                            {"blocks.0.mlp.fc.weight", {4, 3}},
                                                            {"blocks.0.mlp.fc.bias", {4}},
                                                            {"ln_f.weight", {1}},
                                                            {"wte.weight", {5, 2}}};
  for (const auto& [name, shape] : specs) {
    Tensor p = Tensor::empty(shape, DType::f32);
    gen.normal_(p, 0.0, 1.0);
    p.set_requires_grad(true);
    params.emplace_back(name, p);
  }
  return params;
}

optim::AdamWOptions options() {
  optim::AdamWOptions o;
  o.lr = 0.05;
  o.weight_decay = 0.1;
  o.grad_clip = 0.5;  // small: clipping is active, so the global norm matters
  o.schedule.kind = "constant";
  o.schedule.warmup_steps = 0;
  o.schedule.max_steps = 100;
  optim::ParamGroupOptions gates;
  gates.name = "gates";
  gates.match = {"*.attn.gate.*"};
  gates.weight_decay = 0.0;
  gates.lr_scale = 0.5;
  gates.freeze_steps = 2;
  o.groups.push_back(gates);
  return o;
}

// Rank r's gradient of parameter i at step s: different on every rank.
std::vector<double> grad_of(std::size_t i, std::int64_t numel, int rank, std::int64_t step) {
  std::vector<double> g(static_cast<std::size_t>(numel));
  for (std::int64_t k = 0; k < numel; ++k)
    g[static_cast<std::size_t>(k)] = std::sin(1.0 + 0.7 * static_cast<double>(i) + 0.31 * static_cast<double>(k) +
                                              1.3 * rank + 0.17 * static_cast<double>(step));
  return g;
}

void set_rank_grads(std::vector<std::pair<std::string, Tensor>>& params, int rank, std::int64_t step) {
  for (std::size_t i = 0; i < params.size(); ++i) {
    Tensor& p = params[i].second;
    p.set_grad(Tensor::from(grad_of(i, p.numel(), rank, step), p.shape(), DType::f32));
  }
}

// The reference: one AdamW over the mean of the ranks' gradients.
struct Reference {
  std::vector<std::pair<std::string, Tensor>> params;
  std::unique_ptr<optim::AdamW> opt;
};

void set_mean_grads(std::vector<std::pair<std::string, Tensor>>& params, int world, std::int64_t step) {
  for (std::size_t i = 0; i < params.size(); ++i) {
    Tensor& p = params[i].second;
    std::vector<double> mean(static_cast<std::size_t>(p.numel()), 0.0);
    for (int r = 0; r < world; ++r) {
      const auto g = grad_of(i, p.numel(), r, step);
      for (std::size_t k = 0; k < mean.size(); ++k) mean[k] += g[k] / world;
    }
    p.set_grad(Tensor::from(mean, p.shape(), DType::f32));
  }
}

Reference reference_run(int world, std::int64_t steps) {
  Reference ref;
  ref.params = make_params(7);
  ref.opt = std::make_unique<optim::AdamW>(ref.params, options());
  for (std::int64_t s = 0; s < steps; ++s) {
    set_mean_grads(ref.params, world, s);
    ref.opt->clip_grad_norm();
    ref.opt->step(s);
    ref.opt->zero_grad();
  }
  return ref;
}

void expect_close(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  const auto x = a.to_vector(), y = b.to_vector();
  for (std::size_t k = 0; k < x.size(); ++k)
    EXPECT_NEAR(x[k], y[k], 1e-5 * (1.0 + std::abs(y[k]))) << what << "[" << k << "]";
}

class DataParallel : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(DataParallel, MatchesOneAdamWOverTheMeanGradient) {
  const auto [world, zero] = GetParam();
  constexpr std::int64_t kSteps = 4;  // steps 0, 1 frozen for the gates, then updated
  const Reference ref = reference_run(world, kSteps);
  const auto& want = ref.params;
  std::mutex mu;
  testing::ThreadWorld threads(world);
  threads.run([&, zero = zero](dist::Communicator& comm) {
    auto params = make_params(comm.rank() == 0 ? 7 : 99);  // other ranks start elsewhere: the broadcast fixes it
    dist::DistributedOptimizer opt(params, options(), comm, zero);
    opt.broadcast_parameters();
    for (std::int64_t s = 0; s < kSteps; ++s) {
      set_rank_grads(params, comm.rank(), s);
      opt.average_gradients();
      opt.clip_grad_norm();
      opt.step(s);
      opt.zero_grad();
    }
    std::lock_guard<std::mutex> lock(mu);
    for (std::size_t i = 0; i < params.size(); ++i)
      expect_close(params[i].second, want[i].second, "rank " + std::to_string(comm.rank()) + " " + params[i].first);
  });
}

INSTANTIATE_TEST_SUITE_P(WorldsAndZero, DataParallel,
                         ::testing::Values(std::make_tuple(1, 0), std::make_tuple(2, 0), std::make_tuple(3, 0),
                                           std::make_tuple(1, 1), std::make_tuple(2, 1), std::make_tuple(3, 1),
                                           std::make_tuple(8, 1)));

TEST(ZeroAdamW, StateGathersFullAndReshardsOntoAnotherWorld) {
  constexpr std::int64_t kSteps = 3;
  Reference ref = reference_run(3, kSteps);
  const OptimizerSnapshot want = optimizer_snapshot(*ref.opt);
  OptimizerSnapshot gathered;
  std::vector<std::pair<std::string, Tensor>> weights_after;
  std::mutex mu;
  // Three ranks train and gather the state: every rank gets the whole of it, equal to the reference's.
  testing::ThreadWorld three(3);
  three.run([&](dist::Communicator& comm) {
    auto params = make_params(7);
    dist::ZeroAdamW opt(params, options(), comm);
    for (std::int64_t s = 0; s < kSteps; ++s) {
      set_rank_grads(params, comm.rank(), s);
      opt.reduce_scatter_gradients();
      opt.clip_grad_norm();
      opt.step(s);
      opt.zero_grad();
    }
    OptimizerSnapshot state = opt.gather_state();
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_EQ(state.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(state[i].name, want[i].name);
      EXPECT_EQ(state[i].group, want[i].group);
      EXPECT_EQ(state[i].t, want[i].t) << want[i].name;
      expect_close(state[i].exp_avg, want[i].exp_avg, want[i].name + ".exp_avg");
      expect_close(state[i].exp_avg_sq, want[i].exp_avg_sq, want[i].name + ".exp_avg_sq");
    }
    if (comm.rank() == 0) {
      gathered = state;
      for (auto& [name, p] : params) weights_after.emplace_back(name, p.clone());
    }
  });
  // The reference takes one more step with two ranks' gradients...
  set_mean_grads(ref.params, 2, kSteps);
  ref.opt->clip_grad_norm();
  ref.opt->step(kSteps);
  // ...and two ranks that load the three ranks' state (re-sharded) take the same step.
  testing::ThreadWorld two(2);
  two.run([&](dist::Communicator& comm) {
    std::vector<std::pair<std::string, Tensor>> params;
    for (auto& [name, p] : weights_after) params.emplace_back(name, p.clone());
    dist::ZeroAdamW opt(params, options(), comm);
    opt.load_state(gathered);
    set_rank_grads(params, comm.rank(), kSteps);
    opt.reduce_scatter_gradients();
    opt.clip_grad_norm();
    opt.step(kSteps);
    std::lock_guard<std::mutex> lock(mu);
    for (std::size_t i = 0; i < params.size(); ++i)
      expect_close(params[i].second, ref.params[i].second, params[i].first);
  });
}

TEST(ZeroAdamW, AGlobThatMatchesNoParameterIsAConfigErrorOnEveryRank) {
  auto params = make_params(1);
  optim::AdamWOptions o = options();
  o.groups[0].match = {"*.attn.gatee.*"};
  dist::SingleCommunicator comm;
  EXPECT_THROW(dist::ZeroAdamW(params, o, comm), optim::OptimizerConfigError);
}

TEST(GradientBuckets, MeanOverRanksInEveryBucket) {
  testing::ThreadWorld threads(3);
  std::mutex mu;
  threads.run([&](dist::Communicator& comm) {
    auto params = make_params(7);
    dist::GradientBuckets buckets(params, comm, /*bucket_elements=*/8);
    EXPECT_GT(buckets.num_buckets(), 2u);
    set_rank_grads(params, comm.rank(), 0);
    params[4].second.zero_grad();  // a parameter without a gradient counts as zeros
    buckets.finish();
    std::lock_guard<std::mutex> lock(mu);
    for (std::size_t i = 0; i < params.size(); ++i) {
      const Tensor& p = params[i].second;
      ASSERT_TRUE(p.grad().defined());
      const auto got = p.grad().to_vector();
      for (std::int64_t k = 0; k < p.numel(); ++k) {
        double mean = 0;
        for (int r = 0; r < 3; ++r) mean += grad_of(i, p.numel(), r, 0)[static_cast<std::size_t>(k)];
        mean /= 3;
        if (i == 4) {
          // every rank dropped parameter 4's gradient
          EXPECT_EQ(got[static_cast<std::size_t>(k)], 0.0);
        } else {
          EXPECT_NEAR(got[static_cast<std::size_t>(k)], mean, 1e-6);
        }
      }
    }
  });
}

TEST(GradientBuckets, Bf16OnTheWireGivesTheMeanToBf16Precision) {
  // dist.grad_dtype bf16: each gradient rounded to bf16, summed in bf16, the mean back in f32.
  testing::ThreadWorld threads(2);
  std::mutex mu;
  threads.run([&](dist::Communicator& comm) {
    auto params = make_params(7);
    dist::GradientBuckets buckets(params, comm, /*bucket_elements=*/8, DType::bf16);
    set_rank_grads(params, comm.rank(), 0);
    buckets.finish();
    std::lock_guard<std::mutex> lock(mu);
    for (std::size_t i = 0; i < params.size(); ++i) {
      const Tensor& p = params[i].second;
      EXPECT_EQ(p.grad().dtype(), DType::f32);
      const auto got = p.grad().to_vector();
      for (std::int64_t k = 0; k < p.numel(); ++k) {
        const double mean = (grad_of(i, p.numel(), 0, 0)[static_cast<std::size_t>(k)] +
                             grad_of(i, p.numel(), 1, 0)[static_cast<std::size_t>(k)]) /
                            2;
        // Two roundings to 8 significant bits: the inputs, then their sum.
        EXPECT_NEAR(got[static_cast<std::size_t>(k)], mean, 2 * 0.0079 * std::max(1.0, std::fabs(mean)));
      }
    }
  });
  testing::ThreadWorld one(1);
  one.run([&](dist::Communicator& comm) {
    EXPECT_THROW(dist::GradientBuckets(make_params(7), comm, 8, DType::f64), DistError);
    EXPECT_THROW(dist::DistributedOptimizer(make_params(7), optim::AdamWOptions{}, comm, 1, {8, DType::bf16}),
                 DistError);
  });
}

TEST(GradientBackend, AutoPicksNcclWhereEachRankHasAGpuAndStagesWhereTheyShare) {
  using dist::GradientBackend;
  auto choose = [](std::string requested, Device device, int world, int local, int gpus, bool nccl) {
    return dist::choose_gradient_backend({std::move(requested), device, world, local, gpus, nccl});
  };
  // CPU training always uses the host world; nccl there is a mistake.
  EXPECT_EQ(choose("auto", Device::cpu, 4, 4, 8, true).backend, GradientBackend::host);
  EXPECT_EQ(choose("mpi", Device::cpu, 4, 4, 0, false).backend, GradientBackend::host);
  EXPECT_NE(choose("nccl", Device::cpu, 2, 2, 2, true).problem.find("needs device cuda"), std::string::npos);
  // One GPU alone: nothing to exchange, unless NCCL is asked for.
  EXPECT_EQ(choose("auto", Device::cuda, 1, 1, 1, true).backend, GradientBackend::host);
  EXPECT_EQ(choose("nccl", Device::cuda, 1, 1, 1, true).backend, GradientBackend::nccl);
  // Several ranks: NCCL when each has its own GPU and the build has NCCL, else staged MPI.
  EXPECT_EQ(choose("auto", Device::cuda, 8, 4, 4, true).backend, GradientBackend::nccl);
  EXPECT_EQ(choose("auto", Device::cuda, 2, 2, 1, true).backend, GradientBackend::staged);
  EXPECT_EQ(choose("auto", Device::cuda, 2, 2, 2, false).backend, GradientBackend::staged);
  EXPECT_EQ(choose("mpi", Device::cuda, 2, 2, 2, true).backend, GradientBackend::staged);
  EXPECT_TRUE(choose("mpi", Device::cuda, 2, 2, 2, true).problem.empty());
  // nccl forced where it cannot run says why in one line.
  const std::string shared = choose("nccl", Device::cuda, 2, 2, 1, true).problem;
  EXPECT_NE(shared.find("dist.backend 'nccl': 2 ranks on this node but 1 GPU(s)"), std::string::npos) << shared;
  EXPECT_NE(choose("nccl", Device::cuda, 2, 2, 2, false).problem.find("no NCCL"), std::string::npos);
}

TEST(GradientBuckets, TheAutogradHookLaunchesEveryBucketDuringBackward) {
  testing::ThreadWorld threads(2);
  std::mutex mu;
  threads.run([&](dist::Communicator& comm) {
    // y = Σ (w0·x)² + Σ w1·x + Σ w2: three parameters, one bucket each.
    std::vector<std::pair<std::string, Tensor>> params;
    for (const char* name : {"w0", "w1", "w2"}) {
      Tensor p = Tensor::full({4}, 0.5 + static_cast<double>(params.size()), DType::f32);
      p.set_requires_grad(true);
      params.emplace_back(name, p);
    }
    dist::GradientBuckets buckets(params, comm, /*bucket_elements=*/4);
    ASSERT_EQ(buckets.num_buckets(), 3u);
    const Tensor x = Tensor::full({4}, 1.0 + comm.rank(), DType::f32);  // differs per rank
    const Tensor h = ops::mul(params[0].second, x);
    Tensor y = ops::add(ops::add(ops::sum(ops::mul(h, h)), ops::sum(ops::mul(params[1].second, x))),
                        ops::sum(params[2].second));
    autograd::set_leaf_grad_ready_hook([&](const TensorImpl& leaf) { buckets.ready_leaf(leaf); });
    y.backward();
    autograd::set_leaf_grad_ready_hook({});
    EXPECT_EQ(buckets.buckets_in_flight(), 3u);  // all started by the hook, none waited for yet
    buckets.finish();
    EXPECT_EQ(buckets.buckets_in_flight(), 0u);
    std::lock_guard<std::mutex> lock(mu);
    // d/dw0 = 2·w0·x², mean over x = 1, 2: 0.5·(2·0.5·1 + 2·0.5·4) = 2.5; d/dw1 = x -> 1.5; d/dw2 = 1.
    for (double g : params[0].second.grad().to_vector()) EXPECT_DOUBLE_EQ(g, 2.5);
    for (double g : params[1].second.grad().to_vector()) EXPECT_DOUBLE_EQ(g, 1.5);
    for (double g : params[2].second.grad().to_vector()) EXPECT_DOUBLE_EQ(g, 1.0);
  });
}

}  // namespace
}  // namespace gattn
