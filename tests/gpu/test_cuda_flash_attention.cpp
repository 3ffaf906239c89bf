// The fused gated flash-attention CUDA kernels (ops/cuda/flash_attention_*.cu, reached through
// ops::flash_attention on bf16 CUDA tensors or f32 ones under autocast) against the CPU fused op in
// f64 on the same bf16-rounded inputs: output, statistics and every gradient, for the gate kinds
// none / score / forget / pair (with and without noise), windows, head dims 16/32/64/128 and ragged T.
//
// Tolerances (inputs in [−1, 1]; the CPU reference is exact up to f64):
//  - The kernels read the very same bf16 values, accumulate in f32 (error ~T·2⁻²⁴, negligible) and
//    round twice to bf16 (unit roundoff u = 2⁻⁹): P (or A = P⊙M) before the P·V product, and the
//    stored output. So |ΔO_i| ≤ u·Σ_j A_ij|v_j| + u·|O_i| ≤ 2u·max|v| = 2⁻⁸; we allow 2⁻⁷.
//  - Gradients: dV = Aᵀ·dO and dQ, dK = scale·dS·K, dSᵀ·Q each round one operand (A or dS) to bf16
//    and the result once more; dS = P⊙(dA⊙M − D) also sees D = rowsum(dO∘O) from the bf16 output
//    (relative u). Each gradient entry is a sum of terms of either sign with ≤ ~3u relative error
//    each, so the error is ≲ 3u·Σ|terms|, and for these random inputs Σ|terms| stays within a small
//    factor of the largest gradient entry: we bound max|Δ| by 2⁻⁵ (≈ 5·3u) times the largest
//    reference entry of that gradient, plus 1e-4 absolute. At T = 1 the logit gradients vanish
//    exactly (dS_00 = dA_00 − D_0), and D_0 comes from the bf16-rounded output, so there the
//    absolute bound is u·d ≥ u·Σ_x|dO_x·O_x|. A wrong index or a missed tile gives O(1) errors.
//  These bounds hold in the emulation build (the kernels' own source and launchers on the CPU,
//  emulation/), not yet checked on a GPU.
//  - Statistics (entropy, sink, gate moments) use no bf16 rounding beyond the inputs (S, P, G in
//    f32): 1e-4 relative.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "framework/tensor/random.h"
#include "ops/attention.h"
#include "ops/autocast.h"
#include "ops/cuda_attention.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"

namespace gattn {
namespace {

using test::frand;

struct Kind {
  const char* name;
  bool key_bias, forget, pair, noise;
  std::int64_t window;
};

const Kind kKinds[] = {
    {"none", false, false, false, false, 0},   {"score", true, false, false, false, 0},
    {"forget", false, true, false, false, 0},  {"pair", false, false, true, false, 0},
    {"pair_noise", false, false, true, true, 0}, {"window5", false, false, false, false, 5},
    {"all_terms_window70", true, true, true, false, 70},
};

// Leaves of one case: q, k, v and the gate terms (undefined when the kind lacks them).
struct Inputs {
  Tensor q, k, v, key_bias, forget_cum, pair_row, pair_col, pair_alpha;
  std::vector<Tensor*> all() { return {&q, &k, &v, &key_bias, &forget_cum, &pair_row, &pair_col, &pair_alpha}; }
  // The gate terms as the op takes them (temperature 1, no noise).
  ops::AttentionGateTerms terms() const {
    ops::AttentionGateTerms t;
    t.key_bias = key_bias;
    t.forget_cum = forget_cum;
    t.pair_row = pair_row;
    t.pair_col = pair_col;
    t.pair_alpha = pair_alpha;
    return t;
  }
};

// bf16-exact values in [−1, 1] for q, k, v (f32 tensors holding bf16-rounded values), f32 gate terms.
Inputs make_inputs(const Kind& c, std::int64_t B, std::int64_t H, std::int64_t T, std::int64_t d, std::uint64_t seed) {
  auto bf16_exact = [](const Tensor& t) { return t.to(DType::bf16).to(DType::f32); };
  Inputs in;
  in.q = bf16_exact(frand({B, H, T, d}, seed));
  in.k = bf16_exact(frand({B, H, T, d}, seed + 1));
  in.v = bf16_exact(frand({B, H, T, d}, seed + 2));
  if (c.key_bias) in.key_bias = frand({B, H, T}, seed + 3, -2.0, 0.0);
  if (c.forget) in.forget_cum = frand({B, H, T}, seed + 4, -0.5, 0.0);
  if (c.pair) {
    in.pair_row = frand({B, H, T}, seed + 5, -2.0, 2.0);
    in.pair_col = frand({B, H, T}, seed + 6, -2.0, 2.0);
    in.pair_alpha = frand({1}, seed + 7, 0.2, 0.8);
  }
  return in;
}

// Copies with requires_grad: q, k, v in `qkv` dtype, gate terms in `gate` dtype, on `device`.
Inputs leaves(const Inputs& src, DType qkv, DType gate, Device device) {
  Inputs out;
  std::vector<Tensor*> dst = out.all();
  std::vector<Tensor*> from = const_cast<Inputs&>(src).all();
  for (std::size_t i = 0; i < from.size(); ++i) {
    if (!from[i]->defined()) continue;
    *dst[i] = from[i]->to(i < 3 ? qkv : gate).to(device).detach();
    dst[i]->set_requires_grad(true);
  }
  return out;
}

struct Outcome {
  Tensor out;
  std::vector<Tensor> grads;  // q, k, v, key_bias, forget_cum, pair_row, pair_col, pair_alpha (undefined if absent)
  ops::AttentionStats stats;
};

Outcome run_case(const Kind& c, Inputs in, const Tensor& d_out, std::uint64_t noise_seed) {
  Generator gen(noise_seed, 3);
  ops::AttentionGateTerms terms = in.terms();
  terms.pair_temperature = c.noise ? 0.7 : 1.0;
  if (c.noise) terms.pair_noise = &gen;
  ops::AttentionOptions options;
  options.window = c.window;
  Outcome r;
  options.stats = &r.stats;
  r.out = ops::flash_attention(in.q, in.k, in.v, terms, options).out;
  r.out.backward(d_out.to(r.out.dtype()).to(r.out.device()));
  for (Tensor* t : in.all()) r.grads.push_back(t->defined() ? t->grad() : Tensor());
  return r;
}

double max_abs(const Tensor& t) {
  double m = 0;
  for (double x : t.to_vector()) m = std::max(m, std::abs(x));
  return m;
}

// max|got − want| ≤ atol + rel·max|want|.
::testing::AssertionResult close(const Tensor& got, const Tensor& want, double atol, double rel, const std::string& what) {
  if (got.defined() != want.defined()) return ::testing::AssertionFailure() << what << ": defined on one side only";
  if (!want.defined()) return ::testing::AssertionSuccess();
  if (got.shape() != want.shape()) return ::testing::AssertionFailure() << what << ": shape " << got.str() << " vs " << want.str();
  const std::vector<double> g = got.to_vector(), w = want.to_vector();
  const double bound = atol + rel * max_abs(want);
  double worst = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double e = std::abs(g[i] - w[i]);
    if (!(e <= worst)) {  // NaN-safe: a NaN becomes the worst
      worst = e;
      at = i;
    }
  }
  if (worst <= bound) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": max |diff| " << worst << " at " << at << " (got " << g[at] << ", want "
                                       << w[at] << ") exceeds " << bound;
}

const char* kGradNames[] = {"dq", "dk", "dv", "d_key_bias", "d_forget_cum", "d_pair_row", "d_pair_col", "d_alpha"};

TEST(CudaFlashAttention, MatchesTheCpuOpForEveryKindHeadDimAndLength) {
  GATTN_REQUIRE_DEVICE();
  const std::int64_t B = 2, H = 2;
  std::uint64_t seed = 1000;
  for (std::int64_t d : {16, 32, 64, 128})
    for (std::int64_t T : {1, 37, 130, 257})
      for (const Kind& c : kKinds) {
        SCOPED_TRACE(std::string(c.name) + " d=" + std::to_string(d) + " T=" + std::to_string(T));
        const Inputs in = make_inputs(c, B, H, T, d, seed += 10);
        const Tensor d_out = frand({B, H, T, d}, seed + 9).to(DType::bf16);  // bf16-exact for both sides
        const Outcome want = run_case(c, leaves(in, DType::f64, DType::f64, Device::cpu), d_out.to(DType::f64), 77);
        ASSERT_TRUE(ops::cuda_attention_fused(in.q.to(DType::bf16), {}));
        const Outcome got = run_case(c, leaves(in, DType::bf16, DType::f32, Device::cuda), d_out, 77);
        EXPECT_EQ(got.out.dtype(), DType::bf16);
        EXPECT_TRUE(close(got.out, want.out, std::ldexp(1.0, -7), 0.0, "out"));
        // T = 1: the logit gradients vanish exactly (softmax over one key), and what the kernel
        // leaves is D_0 = Σ_x dO_x·O_x taken from the bf16-rounded output: u·Σ|dO_x·O_x| ≤ u·d.
        const double grad_atol = T == 1 ? std::ldexp(static_cast<double>(d), -9) : 1e-4;
        for (std::size_t i = 0; i < got.grads.size(); ++i) {
          if (got.grads[i].defined()) {
            EXPECT_EQ(got.grads[i].dtype(), i < 3 ? DType::bf16 : DType::f32) << kGradNames[i];
          }
          EXPECT_TRUE(close(got.grads[i], want.grads[i], grad_atol, std::ldexp(1.0, -5), kGradNames[i]));
        }
        const ops::AttentionStats& gs = got.stats;
        const ops::AttentionStats& ws = want.stats;
        EXPECT_EQ(gs.entropy_count, ws.entropy_count);
        EXPECT_EQ(gs.sink_count, ws.sink_count);
        EXPECT_NEAR(gs.entropy_sum, ws.entropy_sum, 1e-4 * std::abs(ws.entropy_sum) + 1e-5);
        EXPECT_NEAR(gs.sink_sum, ws.sink_sum, 1e-4 * std::abs(ws.sink_sum) + 1e-5);
        EXPECT_EQ(gs.pair_gate.count, ws.pair_gate.count);
        EXPECT_NEAR(gs.pair_gate.sum, ws.pair_gate.sum, 1e-4 * std::abs(ws.pair_gate.sum) + 1e-5);
        EXPECT_NEAR(gs.pair_gate.sum_sq, ws.pair_gate.sum_sq, 1e-4 * std::abs(ws.pair_gate.sum_sq) + 1e-5);
        // A G within f32 rounding of 0.1 or 0.9 may land on either side.
        EXPECT_NEAR(static_cast<double>(gs.pair_gate.below_0_1), static_cast<double>(ws.pair_gate.below_0_1), 2.0);
        EXPECT_NEAR(static_cast<double>(gs.pair_gate.above_0_9), static_cast<double>(ws.pair_gate.above_0_9), 2.0);
      }
}

// f32 tensors under autocast take the same kernels, rounding to bf16 as they are staged: with
// bf16-exact inputs the f32 accumulators are the same, so the f32 output is the bf16 run's before
// its last rounding (|Δ| ≤ u·|O|), and the gradients agree to the same bf16 rounding of the results.
TEST(CudaFlashAttention, F32UnderAutocastMatchesBf16Inputs) {
  GATTN_REQUIRE_DEVICE();
  const Kind& c = kKinds[6];
  const std::int64_t B = 2, H = 3, T = 130, d = 64;
  const Inputs in = make_inputs(c, B, H, T, d, 4242);
  const Tensor d_out = frand({B, H, T, d}, 4343).to(DType::bf16);
  const Outcome bf = run_case(c, leaves(in, DType::bf16, DType::f32, Device::cuda), d_out, 5);
  Outcome f32;
  {
    ops::AutocastScope scope(ops::ComputePrecision::bf16);
    Inputs leaves32 = leaves(in, DType::f32, DType::f32, Device::cuda);
    ASSERT_TRUE(ops::cuda_attention_fused(leaves32.q, {}));
    f32 = run_case(c, leaves32, d_out.to(DType::f32), 5);
  }
  EXPECT_EQ(f32.out.dtype(), DType::f32);
  EXPECT_TRUE(close(f32.out, bf.out, 1e-6, std::ldexp(1.0, -8), "out"));
  for (std::size_t i = 0; i < f32.grads.size(); ++i) {
    if (f32.grads[i].defined()) {
      EXPECT_EQ(f32.grads[i].dtype(), DType::f32) << kGradNames[i];
    }
    EXPECT_TRUE(close(f32.grads[i], bf.grads[i], 1e-4, std::ldexp(1.0, -7), kGradNames[i]));
  }
  // Outside the scope f32 stays on the composed (exact f32) path.
  EXPECT_FALSE(ops::cuda_attention_fused(in.q.to(Device::cuda), {}));
}

TEST(CudaFlashAttention, BackwardIsBitwiseDeterministic) {
  GATTN_REQUIRE_DEVICE();
  const Kind& c = kKinds[6];
  const Inputs in = make_inputs(c, 2, 4, 257, 64, 777);
  const Tensor d_out = frand({2, 4, 257, 64}, 778).to(DType::bf16);
  const Outcome a = run_case(c, leaves(in, DType::bf16, DType::f32, Device::cuda), d_out, 9);
  const Outcome b = run_case(c, leaves(in, DType::bf16, DType::f32, Device::cuda), d_out, 9);
  EXPECT_TRUE(test::same_bits(a.out, b.out));
  for (std::size_t i = 0; i < a.grads.size(); ++i) {
    if (!a.grads[i].defined()) continue;
    EXPECT_TRUE(test::same_bits(a.grads[i], b.grads[i])) << kGradNames[i];
  }
}

// The differentiable row-entropy output (attn_entropy regularisation) on the fused kernels, through
// f32 tensors under autocast: H and the gradients of Σ out·gO + Σ H·gH. H itself sees no bf16
// rounding beyond the inputs (1e-4); the gradients get the 2⁻⁵ bound above.
TEST(CudaFlashAttention, RowEntropyOutputAndItsGradientsMatchTheCpuOp) {
  GATTN_REQUIRE_DEVICE();
  std::uint64_t seed = 9000;
  for (std::int64_t d : {32, 128})
    for (std::int64_t T : {37, 130})
      for (const Kind& c : {kKinds[0], kKinds[3], kKinds[4], kKinds[6]}) {
        SCOPED_TRACE(std::string(c.name) + " d=" + std::to_string(d) + " T=" + std::to_string(T));
        const std::int64_t B = 2, H = 2;
        const Inputs in = make_inputs(c, B, H, T, d, seed += 10);
        const Tensor g_out = frand({B, H, T, d}, seed + 8), g_ent = frand({B, H, T}, seed + 9);
        auto go = [&](Inputs x, DType dtype, Device device) {
          Generator gen(55, 1);
          ops::AttentionGateTerms terms = x.terms();
          if (c.noise) terms.pair_noise = &gen;
          ops::AttentionOptions options;
          options.window = c.window;
          options.entropy_output = true;
          const ops::AttentionResult r = ops::flash_attention(x.q, x.k, x.v, terms, options);
          const Tensor loss = ops::sum(r.out * g_out.to(dtype).to(device)) + ops::sum(r.row_entropy * g_ent.to(dtype).to(device));
          loss.backward();
          std::vector<Tensor> grads;
          for (Tensor* t : x.all()) grads.push_back(t->defined() ? t->grad() : Tensor());
          return std::make_pair(r.row_entropy.detach(), grads);
        };
        const auto want = go(leaves(in, DType::f64, DType::f64, Device::cpu), DType::f64, Device::cpu);
        std::pair<Tensor, std::vector<Tensor>> got;
        {
          ops::AutocastScope scope(ops::ComputePrecision::bf16);
          Inputs x = leaves(in, DType::f32, DType::f32, Device::cuda);
          ops::AttentionOptions options;
          options.entropy_output = true;
          ASSERT_TRUE(ops::cuda_attention_fused(x.q, options));
          got = go(x, DType::f32, Device::cuda);
        }
        EXPECT_TRUE(close(got.first, want.first, 1e-5, 1e-4, "row_entropy"));
        for (std::size_t i = 0; i < got.second.size(); ++i)
          EXPECT_TRUE(close(got.second[i], want.second[i], 1e-4, std::ldexp(1.0, -5), kGradNames[i]));
      }
}

// bf16 inputs the kernels do not take (head dim 24, or the pair gate's entropy output) run the
// composed attention in f32 and still hand back bf16 outputs and gradients.
TEST(CudaFlashAttention, UnsupportedHeadDimFallsBackToComposed) {
  GATTN_REQUIRE_DEVICE();
  const Kind& c = kKinds[3];
  const std::int64_t B = 1, H = 2, T = 33, d = 24;
  const Inputs in = make_inputs(c, B, H, T, d, 31);
  EXPECT_FALSE(ops::cuda_attention_fused(in.q.to(DType::bf16), {}));
  const Tensor d_out = frand({B, H, T, d}, 32).to(DType::bf16);
  const Outcome want = run_case(c, leaves(in, DType::f64, DType::f64, Device::cpu), d_out.to(DType::f64), 1);
  const Outcome got = run_case(c, leaves(in, DType::bf16, DType::f32, Device::cuda), d_out, 1);
  EXPECT_EQ(got.out.dtype(), DType::bf16);
  EXPECT_TRUE(close(got.out, want.out, std::ldexp(1.0, -7), 0.0, "out"));
  for (std::size_t i = 0; i < got.grads.size(); ++i) {
    if (i < 3 && got.grads[i].defined()) {
      EXPECT_EQ(got.grads[i].dtype(), DType::bf16) << kGradNames[i];
    }
    EXPECT_TRUE(close(got.grads[i], want.grads[i], 1e-4, std::ldexp(1.0, -5), kGradNames[i]));
  }
}

}  // namespace
}  // namespace gattn
