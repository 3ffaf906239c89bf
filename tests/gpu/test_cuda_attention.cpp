// flash_attention on CUDA tensors in f32 (composed from the primitive CUDA ops) against the CPU's
// fused kernel: outputs, row entropies, statistics and the gradients of q, k, v and every term, for
// each term alone and together, windows, skipped query rows and odd T; not causal, with query and
// key lengths equal or not; one key/value head for all query heads (grouped-query attention).
#include <gtest/gtest.h>

#include "cuda_test_util.h"
#include "ops/attention/attention.h"
#include "ops/elementwise.h"
#include "ops/unary.h"

namespace gattn {
namespace {

using test::cuda_matches_cpu;
using test::ExactF32;
using test::frand;
using test::Tolerance;

// Terms as the gates give them: col_bias = log σ(f) (score), a prefix sum c as row_bias = c and
// col_bias = −c (forget), the modulation terms (pair); skip_rows: an active_queries mask; Tk the
// key length (0: T); causal false: every query sees every key; Hkv the key/value heads (0: H).
struct Case {
  const char* name;
  bool col_bias, prefix_difference, modulation;
  std::int64_t window;
  std::int64_t T;
  bool skip_rows = false;
  std::int64_t Tk = 0;
  bool causal = true;
  std::int64_t Hkv = 0;
};

// inputs: q [B, H, T, d], k, v [B, H, Tk, d], then the case's terms in the order f (col_bias =
// log σ(f)), c (prefix sums: one for rows and columns, or with Tk ≠ T one per length),
// modulation_row, modulation_col, modulation_alpha, then the i32 mask. `what` picks the output
// compared: 0 = out, 1 = row entropy.
Tensor run_case(const Case& c, const std::vector<Tensor>& in, int what) {
  ops::AttentionTerms terms;
  std::size_t next = 3;
  if (c.col_bias) terms.col_bias = ops::log_sigmoid(in[next++]);
  if (c.prefix_difference) {
    const Tensor& cum = in[next++];
    const Tensor& cum_k = c.Tk ? in[next++] : cum;
    terms.row_bias = cum;
    terms.col_bias = terms.col_bias.defined() ? terms.col_bias - cum_k : ops::neg(cum_k);
  }
  if (c.modulation) {
    terms.modulation_row = in[next++];
    terms.modulation_col = in[next++];
    terms.modulation_alpha = in[next++];
  }
  ops::AttentionOptions options;
  options.causal = c.causal;
  options.window = c.window;
  options.entropy_output = what == 1;
  if (c.skip_rows) options.active_queries = in[next++];
  ops::AttentionResult r = ops::flash_attention(in[0], in[1], in[2], terms, options);
  return what == 1 ? r.row_entropy : r.out;
}

std::vector<Tensor> case_inputs(const Case& c, std::uint64_t seed) {
  const std::int64_t B = 2, H = 3, d = 16, T = c.T, Tk = c.Tk ? c.Tk : c.T, Hkv = c.Hkv ? c.Hkv : H;
  std::vector<Tensor> in{frand({B, H, T, d}, seed), frand({B, Hkv, Tk, d}, seed + 1), frand({B, Hkv, Tk, d}, seed + 2)};
  if (c.col_bias) in.push_back(frand({B, H, Tk}, seed + 3, -2.0, 2.0));
  // A decreasing prefix sum of log-sigmoids, as the forget gate makes it.
  if (c.prefix_difference) {
    in.push_back(frand({B, H, T}, seed + 4, -0.5, 0.0));
    if (c.Tk) in.push_back(frand({B, H, Tk}, seed + 9, -0.5, 0.0));
  }
  if (c.modulation) {
    in.push_back(frand({B, H, T}, seed + 5));
    in.push_back(frand({B, H, Tk}, seed + 6));
    in.push_back(frand({1}, seed + 7, 0.2, 0.8));
  }
  if (c.skip_rows) {
    // About half the rows, with every row of the second sequence's first 16 skipped.
    const std::vector<double> u = frand({B, T}, seed + 8, 0.0, 1.0).to_vector();
    std::vector<std::int32_t> active(u.size());
    for (std::size_t x = 0; x < u.size(); ++x)
      active[x] = u[x] < 0.5 && !(x >= static_cast<std::size_t>(T) && x < static_cast<std::size_t>(T) + 16);
    in.push_back(Tensor::from_ints(active, {B, T}));
  }
  return in;
}

const Case kCases[] = {
    {"plain", false, false, false, 0, 37},
    {"window", false, false, false, 5, 33},
    {"col_bias", true, false, false, 0, 29},
    {"prefix_difference", false, true, false, 0, 31},
    {"modulation", false, false, true, 0, 23},
    {"all_terms_window", true, true, true, 7, 41},
    {"all_terms_skip_rows", true, true, true, 0, 43, true},
    {"not_causal", false, false, false, 0, 37, false, 0, false},
    {"cross_all_terms", true, true, true, 0, 29, false, 45, false},
    {"cross_all_terms_skip_rows", true, true, true, 0, 43, true, 17, false},
    {"grouped_all_terms_window", true, true, true, 7, 41, false, 0, true, 1},
    {"grouped_cross_all_terms_skip_rows", true, true, true, 0, 43, true, 17, false, 1},
};

TEST(CudaAttention, OutputsAndGradientsMatchTheCpuKernel) {
  GATTN_REQUIRE_DEVICE();
  ExactF32 exact;
  std::uint64_t seed = 10;
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    const std::vector<Tensor> in = case_inputs(c, seed += 10);
    EXPECT_TRUE(cuda_matches_cpu([&](const std::vector<Tensor>& x) { return run_case(c, x, 0); }, in,
                                 Tolerance{2e-5, 1e-5}, Tolerance{5e-5, 1e-4}));
  }
}

TEST(CudaAttention, RowEntropyAndItsGradientsMatchTheCpuKernel) {
  GATTN_REQUIRE_DEVICE();
  ExactF32 exact;
  std::uint64_t seed = 200;
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    const std::vector<Tensor> in = case_inputs(c, seed += 10);
    EXPECT_TRUE(cuda_matches_cpu([&](const std::vector<Tensor>& x) { return run_case(c, x, 1); }, in,
                                 Tolerance{5e-5, 1e-4}, Tolerance{2e-4, 1e-3}));
  }
}

TEST(CudaAttention, StatisticsMatchTheCpuKernel) {
  GATTN_REQUIRE_DEVICE();
  ExactF32 exact;
  const Case c = kCases[6];
  const std::vector<Tensor> in = case_inputs(c, 500);
  bool skip = false;
  auto stats_of = [&](Device device) {
    ops::AttentionTerms terms;
    const Tensor cum = in[4].to(device);
    terms.row_bias = cum;
    terms.col_bias = ops::log_sigmoid(in[3].to(device)) - cum;
    terms.modulation_row = in[5].to(device);
    terms.modulation_col = in[6].to(device);
    terms.modulation_alpha = in[7].to(device);
    ops::AttentionStats stats;
    ops::AttentionOptions options;
    options.window = c.window;
    options.stats = &stats;
    if (skip) options.active_queries = in[8].to(device);
    ops::flash_attention(in[0].to(device), in[1].to(device), in[2].to(device), terms, options);
    return stats;
  };
  for (bool with_mask : {false, true}) {
    SCOPED_TRACE(with_mask ? "skipped rows" : "every row");
    skip = with_mask;
    const ops::AttentionStats cpu = stats_of(Device::cpu), gpu = stats_of(Device::cuda);
    EXPECT_EQ(gpu.entropy_count, cpu.entropy_count);
    EXPECT_EQ(gpu.sink_count, cpu.sink_count);
    EXPECT_EQ(gpu.modulation.count, cpu.modulation.count);
    EXPECT_NEAR(gpu.entropy_sum, cpu.entropy_sum, 1e-4 * std::abs(cpu.entropy_sum) + 1e-4);
    EXPECT_NEAR(gpu.sink_sum, cpu.sink_sum, 1e-4 * std::abs(cpu.sink_sum) + 1e-5);
    EXPECT_NEAR(gpu.modulation.sum, cpu.modulation.sum, 1e-4 * std::abs(cpu.modulation.sum) + 1e-5);
  }
}

TEST(CudaAttention, MixedDevicesAreAClearError) {
  GATTN_REQUIRE_DEVICE();
  const Tensor q = frand({1, 1, 4, 8}, 1), k = frand({1, 1, 4, 8}, 2).to(Device::cuda), v = frand({1, 1, 4, 8}, 3);
  EXPECT_THROW(ops::flash_attention(q, k, v), DeviceError);
}

}  // namespace
}  // namespace gattn
