// flash_attention on CUDA tensors (composed from the primitive CUDA ops until the fused kernels of
// issue 7) against the CPU's fused kernel: outputs, row entropies, statistics and the gradients of
// q, k, v and every gate term, for each gate term alone and together, windows and odd T.
#include <gtest/gtest.h>

#include "cuda_test_util.h"
#include "ops/attention.h"
#include "ops/unary.h"

namespace gattn {
namespace {

using test::cuda_matches_cpu;
using test::ExactF32;
using test::frand;
using test::Tolerance;

struct Case {
  const char* name;
  bool key_bias, forget, pair;
  std::int64_t window;
  std::int64_t T;
};

// inputs: q, k, v [B, H, T, d], then the case's terms in the order key_bias, forget_cum,
// pair_row, pair_col, pair_alpha. `what` picks the output compared: 0 = out, 1 = row entropy.
Tensor run_case(const Case& c, const std::vector<Tensor>& in, int what) {
  ops::AttentionGateTerms terms;
  std::size_t next = 3;
  if (c.key_bias) terms.key_bias = ops::log_sigmoid(in[next++]);
  if (c.forget) terms.forget_cum = in[next++];
  if (c.pair) {
    terms.pair_row = in[next++];
    terms.pair_col = in[next++];
    terms.pair_alpha = in[next++];
  }
  ops::AttentionOptions options;
  options.window = c.window;
  options.entropy_output = what == 1;
  ops::AttentionResult r = ops::flash_attention(in[0], in[1], in[2], terms, options);
  return what == 1 ? r.row_entropy : r.out;
}

std::vector<Tensor> case_inputs(const Case& c, std::uint64_t seed) {
  const std::int64_t B = 2, H = 3, d = 16, T = c.T;
  std::vector<Tensor> in{frand({B, H, T, d}, seed), frand({B, H, T, d}, seed + 1), frand({B, H, T, d}, seed + 2)};
  if (c.key_bias) in.push_back(frand({B, H, T}, seed + 3, -2.0, 2.0));
  // A decreasing prefix sum of log-sigmoids, as the forget gate makes it.
  if (c.forget) in.push_back(frand({B, H, T}, seed + 4, -0.5, 0.0));
  if (c.pair) {
    in.push_back(frand({B, H, T}, seed + 5));
    in.push_back(frand({B, H, T}, seed + 6));
    in.push_back(frand({1}, seed + 7, 0.2, 0.8));
  }
  return in;
}

const Case kCases[] = {
    {"plain", false, false, false, 0, 37},      {"window", false, false, false, 5, 33},
    {"score", true, false, false, 0, 29},       {"forget", false, true, false, 0, 31},
    {"pair", false, false, true, 0, 23},        {"all_terms_window", true, true, true, 7, 41},
};

TEST(CudaAttention, OutputsAndGradientsMatchTheCpuKernel) {
  GATTN_REQUIRE_DEVICE();
  ExactF32 exact;
  std::uint64_t seed = 10;
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    const std::vector<Tensor> in = case_inputs(c, seed += 10);
    EXPECT_TRUE(cuda_matches_cpu([&](const std::vector<Tensor>& x) { return run_case(c, x, 0); }, in, Tolerance{2e-5, 1e-5},
                                 Tolerance{5e-5, 1e-4}));
  }
}

TEST(CudaAttention, RowEntropyAndItsGradientsMatchTheCpuKernel) {
  GATTN_REQUIRE_DEVICE();
  ExactF32 exact;
  std::uint64_t seed = 200;
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    const std::vector<Tensor> in = case_inputs(c, seed += 10);
    EXPECT_TRUE(cuda_matches_cpu([&](const std::vector<Tensor>& x) { return run_case(c, x, 1); }, in, Tolerance{5e-5, 1e-4},
                                 Tolerance{2e-4, 1e-3}));
  }
}

TEST(CudaAttention, StatisticsMatchTheCpuKernel) {
  GATTN_REQUIRE_DEVICE();
  ExactF32 exact;
  const Case c = kCases[5];
  const std::vector<Tensor> in = case_inputs(c, 500);
  auto stats_of = [&](Device device) {
    ops::AttentionGateTerms terms;
    terms.key_bias = ops::log_sigmoid(in[3].to(device));
    terms.forget_cum = in[4].to(device);
    terms.pair_row = in[5].to(device);
    terms.pair_col = in[6].to(device);
    terms.pair_alpha = in[7].to(device);
    ops::AttentionStats stats;
    ops::AttentionOptions options;
    options.window = c.window;
    options.stats = &stats;
    ops::flash_attention(in[0].to(device), in[1].to(device), in[2].to(device), terms, options);
    return stats;
  };
  const ops::AttentionStats cpu = stats_of(Device::cpu), gpu = stats_of(Device::cuda);
  EXPECT_EQ(gpu.entropy_count, cpu.entropy_count);
  EXPECT_EQ(gpu.sink_count, cpu.sink_count);
  EXPECT_EQ(gpu.pair_gate.count, cpu.pair_gate.count);
  EXPECT_NEAR(gpu.entropy_sum, cpu.entropy_sum, 1e-4 * std::abs(cpu.entropy_sum) + 1e-4);
  EXPECT_NEAR(gpu.sink_sum, cpu.sink_sum, 1e-4 * std::abs(cpu.sink_sum) + 1e-5);
  EXPECT_NEAR(gpu.pair_gate.sum, cpu.pair_gate.sum, 1e-4 * std::abs(cpu.pair_gate.sum) + 1e-5);
}

TEST(CudaAttention, MixedDevicesAreAClearError) {
  GATTN_REQUIRE_DEVICE();
  const Tensor q = frand({1, 1, 4, 8}, 1), k = frand({1, 1, 4, 8}, 2).to(Device::cuda), v = frand({1, 1, 4, 8}, 3);
  EXPECT_THROW(ops::flash_attention(q, k, v), DeviceError);
}

}  // namespace
}  // namespace gattn
