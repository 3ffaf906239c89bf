// The fused flash-attention CUDA kernels (ops/attention/cuda/flash_attention_*.cu, reached through
// ops::flash_attention on bf16 CUDA tensors or f32 ones under autocast) against the CPU fused op in
// f64 on the same bf16-rounded inputs: output, statistics and every gradient, for the terms the gate
// kinds give (none; a column bias, score; row and column biases of a prefix sum, forget; the
// modulation, pair, with and without noise), windows, skipped query rows, head dims 16/32/64/128
// and ragged T; not causal (an encoder's self-attention) and cross-attention with Tq ≠ Tk; grouped
// query heads (k, v with fewer heads than q); adaptive computation pruning (the same tiles skipped
// as the CPU op skips, forward and backward).
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
#include <utility>
#include <vector>

#include "core/tensor/random.h"
#include "cuda_test_util.h"
#include "ops/attention/attention.h"
#include "ops/attention/cuda_attention.h"
#include "ops/autocast.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/scan.h"
#include "ops/shape.h"

namespace gattn {
namespace {

using test::frand;

struct Kind {
  const char* name;
  bool col_bias, prefix_difference, modulation, noise;
  std::int64_t window;
  bool causal = true;
  double prune_threshold = 0;  // adaptive computation pruning's θ (0: off)
};

const Kind kKinds[] = {
    {"none", false, false, false, false, 0},
    {"col_bias", true, false, false, false, 0},
    {"prefix_difference", false, true, false, false, 0},
    {"modulation", false, false, true, false, 0},
    {"modulation_noise", false, false, true, true, 0},
    {"window5", false, false, false, false, 5},
    {"all_terms_window70", true, true, true, false, 70},
};

// Leaves of one case: q, k, v and the terms (undefined when the kind lacks them).
struct Inputs {
  Tensor q, k, v, row_bias, col_bias, mod_row, mod_col, mod_alpha;
  std::vector<Tensor*> all() { return {&q, &k, &v, &row_bias, &col_bias, &mod_row, &mod_col, &mod_alpha}; }
  // The terms as the op takes them (temperature 1, no noise).
  ops::AttentionTerms terms() const {
    ops::AttentionTerms t;
    t.row_bias = row_bias;
    t.col_bias = col_bias;
    t.modulation_row = mod_row;
    t.modulation_col = mod_col;
    t.modulation_alpha = mod_alpha;
    return t;
  }
};

// bf16-exact values in [−1, 1] for q, k, v (f32 tensors holding bf16-rounded values), f32 terms:
// col_bias in [−2, 0] (log σ), a prefix sum c in [−0.5, 0] as row_bias = c and col_bias −= c.
// T queries and Tk keys (0: T); Hkv key/value heads (0: H), the terms per query head.
Inputs make_inputs(const Kind& c, std::int64_t B, std::int64_t H, std::int64_t T, std::int64_t d, std::uint64_t seed,
                   std::int64_t Tk = 0, std::int64_t Hkv = 0) {
  auto bf16_exact = [](const Tensor& t) { return t.to(DType::bf16).to(DType::f32); };
  if (Tk == 0) Tk = T;
  if (Hkv == 0) Hkv = H;
  Inputs in;
  in.q = bf16_exact(frand({B, H, T, d}, seed));
  in.k = bf16_exact(frand({B, Hkv, Tk, d}, seed + 1));
  in.v = bf16_exact(frand({B, Hkv, Tk, d}, seed + 2));
  if (c.col_bias) in.col_bias = frand({B, H, Tk}, seed + 3, -2.0, 0.0);
  if (c.prefix_difference) {
    // One sequence of values over the longer length: rows take the first T, columns the first Tk.
    const Tensor cum = frand({B, H, std::max(T, Tk)}, seed + 4, -0.5, 0.0);
    in.row_bias = ops::slice(cum, 2, 0, T);
    const Tensor cum_k = ops::slice(cum, 2, 0, Tk);
    in.col_bias = in.col_bias.defined() ? in.col_bias - cum_k : ops::neg(cum_k);
  }
  if (c.modulation) {
    in.mod_row = frand({B, H, T}, seed + 5, -2.0, 2.0);
    in.mod_col = frand({B, H, Tk}, seed + 6, -2.0, 2.0);
    in.mod_alpha = frand({1}, seed + 7, 0.2, 0.8);
  }
  return in;
}

// Copies with requires_grad: q, k, v in `qkv` dtype, the other terms in `terms` dtype, on `device`.
Inputs leaves(const Inputs& src, DType qkv, DType terms, Device device) {
  Inputs out;
  std::vector<Tensor*> dst = out.all();
  std::vector<Tensor*> from = const_cast<Inputs&>(src).all();
  for (std::size_t i = 0; i < from.size(); ++i) {
    if (!from[i]->defined()) continue;
    *dst[i] = from[i]->to(i < 3 ? qkv : terms).to(device).detach();
    dst[i]->set_requires_grad(true);
  }
  return out;
}

struct Outcome {
  Tensor out;
  std::vector<Tensor> grads;  // q, k, v, row_bias, col_bias, mod_row, mod_col, mod_alpha (undefined if absent)
  ops::AttentionStats stats;
};

// `active`: an i32 [B, T] active_queries mask (CPU; moved to the inputs' device), or undefined.
Outcome run_case(const Kind& c, Inputs in, const Tensor& d_out, std::uint64_t noise_seed, const Tensor& active = {}) {
  Generator gen(noise_seed, 3);
  ops::AttentionTerms terms = in.terms();
  terms.modulation_temperature = c.noise ? 0.7 : 1.0;
  if (c.noise) terms.modulation_noise = &gen;
  ops::AttentionOptions options;
  options.causal = c.causal;
  options.window = c.window;
  options.prune_threshold = c.prune_threshold;
  if (active.defined()) options.active_queries = active.to(in.q.device());
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

// max|got − want| ≤ atol + rel·scale, scale = max|want| unless given.
::testing::AssertionResult close(const Tensor& got, const Tensor& want, double atol, double rel,
                                 const std::string& what, double scale = -1) {
  if (got.defined() != want.defined()) return ::testing::AssertionFailure() << what << ": defined on one side only";
  if (!want.defined()) return ::testing::AssertionSuccess();
  if (got.shape() != want.shape())
    return ::testing::AssertionFailure() << what << ": shape " << got.str() << " vs " << want.str();
  const std::vector<double> g = got.to_vector(), w = want.to_vector();
  const double bound = atol + rel * (scale >= 0 ? scale : max_abs(want));
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
  return ::testing::AssertionFailure() << what << ": max |diff| " << worst << " at " << at << " (got " << g[at]
                                       << ", want " << w[at] << ") exceeds " << bound;
}

// Gradient i of `got` against `want` with the bound above. d_row_bias (i = 3) is a row sum of dS,
// 0 in exact arithmetic (a shift of the whole row does not change the softmax): what the kernels
// leave is the rounding of the dS entries it sums, D_i = dO·O taken from the bf16-rounded P·V among
// them, so its scale is that of the column sums of the same dS, d_col_bias.
::testing::AssertionResult close_grad(const std::vector<Tensor>& got, const std::vector<Tensor>& want, std::size_t i,
                                      double atol, double rel, const std::string& what) {
  double scale = -1;
  if (i == 3 && want[3].defined()) scale = std::max(max_abs(want[3]), want[4].defined() ? max_abs(want[4]) : 0.0);
  return close(got[i], want[i], atol, rel, what, scale);
}

const char* kGradNames[] = {"dq",     "dk", "dv", "d_row_bias", "d_col_bias", "d_modulation_row", "d_modulation_col",
                            "d_alpha"};

// Statistics (entropy, sink, modulation moments) see no bf16 rounding beyond the inputs: 1e-4 relative.
void expect_same_stats(const ops::AttentionStats& gs, const ops::AttentionStats& ws) {
  EXPECT_EQ(gs.entropy_count, ws.entropy_count);
  EXPECT_EQ(gs.sink_count, ws.sink_count);
  EXPECT_NEAR(gs.entropy_sum, ws.entropy_sum, 1e-4 * std::abs(ws.entropy_sum) + 1e-5);
  EXPECT_NEAR(gs.sink_sum, ws.sink_sum, 1e-4 * std::abs(ws.sink_sum) + 1e-5);
  EXPECT_EQ(gs.modulation.count, ws.modulation.count);
  EXPECT_NEAR(gs.modulation.sum, ws.modulation.sum, 1e-4 * std::abs(ws.modulation.sum) + 1e-5);
  EXPECT_NEAR(gs.modulation.sum_sq, ws.modulation.sum_sq, 1e-4 * std::abs(ws.modulation.sum_sq) + 1e-5);
  // A G within f32 rounding of 0.1 or 0.9 may land on either side.
  EXPECT_NEAR(static_cast<double>(gs.modulation.below_0_1), static_cast<double>(ws.modulation.below_0_1), 2.0);
  EXPECT_NEAR(static_cast<double>(gs.modulation.above_0_9), static_cast<double>(ws.modulation.above_0_9), 2.0);
}

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
          EXPECT_TRUE(close_grad(got.grads, want.grads, i, grad_atol, std::ldexp(1.0, -5), kGradNames[i]));
        }
        expect_same_stats(got.stats, want.stats);
      }
}

// The pair gate's modulation forms on the fused kernels: softplus G, dropout (the same Philox mask
// as the CPU op's, so the same entries drop) and the modulation sum Σ G with its gradient, against
// the CPU op in f64: out, the sum, every gradient, the moments, and the generator's advance.
TEST(CudaFlashAttention, ModulationFormsMatchTheCpuOp) {
  GATTN_REQUIRE_DEVICE();
  const std::int64_t B = 2, H = 2;
  std::uint64_t seed = 40000;
  const Kind& c = kKinds[6];  // every term, window 70
  for (std::int64_t d : {32, 64})
    for (std::int64_t T : {37, 130})
      for (bool softplus : {false, true})
        for (double dropout : {0.0, 0.3}) {
          SCOPED_TRACE("d=" + std::to_string(d) + " T=" + std::to_string(T) + (softplus ? " softplus" : " sigmoid") +
                       " dropout=" + std::to_string(dropout));
          const Inputs in = make_inputs(c, B, H, T, d, seed += 10);
          const Tensor d_out = frand({B, H, T, d}, seed + 9).to(DType::bf16);
          const Tensor w_sum = frand({B, H}, seed + 8);
          auto run_forms = [&](Inputs leaf, const Tensor& dO, Generator& gen) {
            ops::AttentionTerms terms = leaf.terms();
            terms.modulation_softplus = softplus;
            terms.modulation_dropout = dropout;
            terms.modulation_dropout_noise = &gen;
            ops::AttentionOptions options;
            options.window = c.window;
            options.modulation_sum = true;
            Outcome r;
            options.stats = &r.stats;
            const ops::AttentionResult res = ops::flash_attention(leaf.q, leaf.k, leaf.v, terms, options);
            r.out = res.out;
            // Both outputs' gradients, one pass each through the op's node (the gradient is linear).
            res.out.backward(dO.to(res.out.dtype()).to(res.out.device()), true);
            res.modulation_sum.backward(w_sum.to(res.modulation_sum.dtype()).to(res.modulation_sum.device()));
            for (Tensor* t : leaf.all()) r.grads.push_back(t->defined() ? t->grad() : Tensor());
            return std::make_pair(r, res.modulation_sum.detach().to(DType::f64).to(Device::cpu));
          };
          Generator g_cpu(5, 7), g_gpu(5, 7);
          const auto [want, want_sum] = run_forms(leaves(in, DType::f64, DType::f64, Device::cpu), d_out, g_cpu);
          // f32 leaves under bf16 autocast (the trainer's way in): the fused kernels, and gradients the
          // two backward passes can add up (bf16 leaf gradients cannot be summed).
          ops::AutocastScope autocast(ops::ComputePrecision::bf16);
          ASSERT_TRUE(ops::cuda_attention_fused(in.q, {}));
          const auto [got, got_sum] = run_forms(leaves(in, DType::f32, DType::f32, Device::cuda), d_out, g_gpu);
          EXPECT_EQ(g_cpu.state().offset, g_gpu.state().offset);
          EXPECT_TRUE(close(got.out, want.out, std::ldexp(1.0, -7), 0.0, "out"));
          // f32 sums of G from bf16-rounded products' inputs: the terms are f32, so only summation order differs.
          EXPECT_TRUE(close(got_sum, want_sum, 1e-3, 1e-5, "modulation_sum"));
          for (std::size_t i = 0; i < got.grads.size(); ++i)
            EXPECT_TRUE(close_grad(got.grads, want.grads, i, 1e-4, std::ldexp(1.0, -5), kGradNames[i]));
          expect_same_stats(got.stats, want.stats);
        }
}

TEST(CudaFlashAttention, AlphaPerHeadMatchesTheCpuOp) {
  // α per query head with zeros (the pair gate's `heads`): out, every gradient (α's [H] one
  // included) and the per-head modulation moments against the CPU op in f64.
  GATTN_REQUIRE_DEVICE();
  const std::int64_t B = 2, H = 3;
  std::uint64_t seed = 5000;
  for (const Kind& c : {kKinds[3], kKinds[4], kKinds[6]})  // modulation, with noise, with every term
    for (std::int64_t T : {37, 130}) {
      SCOPED_TRACE(std::string(c.name) + " T=" + std::to_string(T));
      Inputs in = make_inputs(c, B, H, T, 64, seed += 10);
      in.mod_alpha = Tensor::from({0.7, 0.0, 0.35}, {H}, DType::f32);
      const Tensor d_out = frand({B, H, T, 64}, seed + 9).to(DType::bf16);
      const Outcome want = run_case(c, leaves(in, DType::f64, DType::f64, Device::cpu), d_out.to(DType::f64), 77);
      const Outcome got = run_case(c, leaves(in, DType::bf16, DType::f32, Device::cuda), d_out, 77);
      EXPECT_TRUE(close(got.out, want.out, std::ldexp(1.0, -7), 0.0, "out"));
      for (std::size_t i = 0; i < got.grads.size(); ++i)
        EXPECT_TRUE(close_grad(got.grads, want.grads, i, 1e-4, std::ldexp(1.0, -5), kGradNames[i]));
      ASSERT_EQ(got.grads[7].shape(), (Shape{H}));
      expect_same_stats(got.stats, want.stats);
      ASSERT_EQ(got.stats.modulation_by_head.size(), static_cast<std::size_t>(H));
      for (std::size_t h = 0; h < 3; ++h) {
        const ops::GateMoments &g = got.stats.modulation_by_head[h], &w = want.stats.modulation_by_head[h];
        EXPECT_EQ(g.count, w.count) << "head " << h;
        EXPECT_NEAR(g.sum, w.sum, 1e-4 * std::abs(w.sum) + 1e-5) << "head " << h;
      }
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
    EXPECT_TRUE(close_grad(f32.grads, bf.grads, i, 1e-4, std::ldexp(1.0, -7), kGradNames[i]));
  }
  // Outside the scope f32 stays on the composed (exact f32) path.
  EXPECT_FALSE(ops::cuda_attention_fused(in.q.to(Device::cuda), {}));
}

// Two runs of case `c` on the same bf16 inputs give the same bits, output and every gradient.
void expect_bitwise_deterministic(const Kind& c, const Inputs& in, const Tensor& d_out) {
  const Outcome a = run_case(c, leaves(in, DType::bf16, DType::f32, Device::cuda), d_out, 9);
  const Outcome b = run_case(c, leaves(in, DType::bf16, DType::f32, Device::cuda), d_out, 9);
  EXPECT_TRUE(test::same_bits(a.out, b.out));
  for (std::size_t i = 0; i < a.grads.size(); ++i) {
    if (!a.grads[i].defined()) continue;
    EXPECT_TRUE(test::same_bits(a.grads[i], b.grads[i])) << kGradNames[i];
  }
}

TEST(CudaFlashAttention, BackwardIsBitwiseDeterministic) {
  GATTN_REQUIRE_DEVICE();
  const Kind& c = kKinds[6];
  expect_bitwise_deterministic(c, make_inputs(c, 2, 4, 257, 64, 777), frand({2, 4, 257, 64}, 778).to(DType::bf16));
}

// The row-entropy output and the gradients of Σ out·gO + Σ H·gH, from the fused CUDA kernels under
// bf16 autocast (f32 tensors) against the CPU op in f64, for attention `options` (entropy_output is
// set here; an active_queries mask is given on the CPU). H itself sees no bf16 rounding beyond the
// inputs (1e-4); the gradients get the 2⁻⁵ bound above. With `compare_stats` the forward's
// statistics must match too.
void expect_row_entropy_matches_cpu(const Kind& c, const Inputs& in, ops::AttentionOptions options, const Tensor& g_out,
                                    const Tensor& g_ent, bool compare_stats) {
  options.entropy_output = true;
  const Tensor active = options.active_queries;
  auto go = [&](Inputs x, DType dtype, Device device, ops::AttentionStats* stats) {
    Generator gen(55, 1);
    ops::AttentionTerms terms = x.terms();
    if (c.noise) terms.modulation_noise = &gen;
    ops::AttentionOptions o = options;
    if (active.defined()) o.active_queries = active.to(device);
    o.stats = stats;
    const ops::AttentionResult r = ops::flash_attention(x.q, x.k, x.v, terms, o);
    const Tensor loss =
        ops::sum(r.out * g_out.to(dtype).to(device)) + ops::sum(r.row_entropy * g_ent.to(dtype).to(device));
    loss.backward();
    std::vector<Tensor> grads;
    for (Tensor* t : x.all()) grads.push_back(t->defined() ? t->grad() : Tensor());
    return std::make_pair(r.row_entropy.detach(), grads);
  };
  ops::AttentionStats want_stats, got_stats;
  const auto want = go(leaves(in, DType::f64, DType::f64, Device::cpu), DType::f64, Device::cpu, &want_stats);
  std::pair<Tensor, std::vector<Tensor>> got;
  {
    ops::AutocastScope scope(ops::ComputePrecision::bf16);
    Inputs x = leaves(in, DType::f32, DType::f32, Device::cuda);
    ASSERT_TRUE(ops::cuda_attention_fused(x.q, options));
    got = go(x, DType::f32, Device::cuda, &got_stats);
  }
  EXPECT_TRUE(close(got.first, want.first, 1e-5, 1e-4, "row_entropy"));
  for (std::size_t i = 0; i < got.second.size(); ++i)
    EXPECT_TRUE(close_grad(got.second, want.second, i, 1e-4, std::ldexp(1.0, -5), kGradNames[i]));
  if (compare_stats) expect_same_stats(got_stats, want_stats);
}

// The differentiable row-entropy output (attn_entropy regularisation) on the fused kernels, causal
// (with each kind's window).
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
        ops::AttentionOptions options;
        options.window = c.window;
        expect_row_entropy_matches_cpu(c, in, options, g_out, g_ent, false);
      }
}

// An i32 [B, T] active_queries mask (CPU). pattern 0: rows active with probability 1/2; 1: in the
// first sequence rows 0–63 skipped and row 64 the only active row of its 64-row block, the rest
// random; the second sequence active from row 200 on only (every earlier block skipped); 2: no row.
Tensor active_mask(int pattern, std::int64_t B, std::int64_t T, std::uint64_t seed) {
  const std::vector<double> u = frand({B, T}, seed, 0.0, 1.0).to_vector();
  std::vector<std::int32_t> a(u.size());
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t i = 0; i < T; ++i) {
      const std::size_t at = static_cast<std::size_t>(b * T + i);
      const bool coin = u[at] < 0.5;
      if (pattern == 0) a[at] = coin;
      if (pattern == 1) a[at] = b == 0 ? (i < 128 ? i == 64 : coin) : i >= 200;
      if (pattern == 2) a[at] = 0;
    }
  return Tensor::from_ints(a, {B, T});
}

// Skipped query rows on the fused kernels (f32 tensors under autocast) against the CPU op: the
// output (exactly 0 on skipped rows), the row entropy, the statistics and every gradient of Σ out·gO
// and, separately, of Σ H·gH (the two can cancel in the sums of d_alpha, which would hide their
// rounding's true scale), with the tolerances above. The GPU side gets NaN in the skipped rows' gO
// and gH, which must reach nothing (the CPU side gets the clean values).
TEST(CudaFlashAttention, SkippedQueryRowsMatchTheCpuOp) {
  GATTN_REQUIRE_DEVICE();
  const std::int64_t B = 2, H = 2;
  std::uint64_t seed = 12000;
  for (std::int64_t d : {32, 128})
    for (std::int64_t T : {130, 257})
      for (const Kind& c : {kKinds[0], kKinds[2], kKinds[4], kKinds[6]})
        for (int pattern : {0, 1, 2}) {
          SCOPED_TRACE(std::string(c.name) + " d=" + std::to_string(d) + " T=" + std::to_string(T) + " mask " +
                       std::to_string(pattern));
          const Inputs in = make_inputs(c, B, H, T, d, seed += 10);
          const Tensor active = active_mask(pattern, B, T, seed + 7);
          const std::vector<double> act = active.to_vector();
          auto skipped = [&](std::int64_t bh, std::int64_t i) {
            return act[static_cast<std::size_t>((bh / H) * T + i)] == 0.0;
          };
          const Tensor g_out = frand({B, H, T, d}, seed + 8), g_ent = frand({B, H, T}, seed + 9);
          std::vector<double> g_out_nan = g_out.to_vector(), g_ent_nan = g_ent.to_vector();
          for (std::int64_t bh = 0; bh < B * H; ++bh)
            for (std::int64_t i = 0; i < T; ++i)
              if (skipped(bh, i)) {
                g_ent_nan[static_cast<std::size_t>(bh * T + i)] = NAN;
                std::fill_n(g_out_nan.begin() + (bh * T + i) * d, d, NAN);
              }
          struct Run {
            Tensor out, row_entropy;
            std::vector<Tensor> grads;
            ops::AttentionStats stats;
          };
          // part 0: the loss Σ out·gO; part 1: Σ H·gH.
          auto go = [&](Inputs x, DType dtype, Device device, const Tensor& go_out, const Tensor& go_ent, int part) {
            Generator gen(55, 1);
            ops::AttentionTerms terms = x.terms();
            if (c.noise) terms.modulation_noise = &gen;
            Run r;
            ops::AttentionOptions options;
            options.window = c.window;
            options.entropy_output = true;
            options.active_queries = active.to(device);
            options.stats = &r.stats;
            const ops::AttentionResult res = ops::flash_attention(x.q, x.k, x.v, terms, options);
            const Tensor loss = part == 0 ? ops::sum(res.out * go_out.to(dtype).to(device))
                                          : ops::sum(res.row_entropy * go_ent.to(dtype).to(device));
            loss.backward();
            r.out = res.out.detach();
            r.row_entropy = res.row_entropy.detach();
            for (Tensor* t : x.all()) r.grads.push_back(t->defined() ? t->grad() : Tensor());
            return r;
          };
          Run got, want;
          for (int part : {0, 1}) {
            SCOPED_TRACE(part == 0 ? "loss through out" : "loss through the row entropy");
            want = go(leaves(in, DType::f64, DType::f64, Device::cpu), DType::f64, Device::cpu, g_out, g_ent, part);
            {
              ops::AutocastScope scope(ops::ComputePrecision::bf16);
              Inputs x = leaves(in, DType::f32, DType::f32, Device::cuda);
              ops::AttentionOptions options;
              options.entropy_output = true;
              ASSERT_TRUE(ops::cuda_attention_fused(x.q, options));
              got = go(x, DType::f32, Device::cuda, Tensor::from(g_out_nan, {B, H, T, d}, DType::f32),
                       Tensor::from(g_ent_nan, {B, H, T}, DType::f32), part);
            }
            for (std::size_t i = 0; i < got.grads.size(); ++i)
              EXPECT_TRUE(close_grad(got.grads, want.grads, i, 1e-4, std::ldexp(1.0, -5), kGradNames[i]));
          }
          EXPECT_TRUE(close(got.out, want.out, std::ldexp(1.0, -7), 0.0, "out"));
          EXPECT_TRUE(close(got.row_entropy, want.row_entropy, 1e-5, 1e-4, "row_entropy"));
          expect_same_stats(got.stats, want.stats);
          // Skipped rows: exactly zero output and dq.
          const std::vector<double> out = got.out.to_vector(), dq = got.grads[0].to_vector();
          for (std::int64_t bh = 0; bh < B * H; ++bh)
            for (std::int64_t i = 0; i < T; ++i) {
              if (!skipped(bh, i)) continue;
              for (std::int64_t x = 0; x < d; ++x) {
                ASSERT_EQ(out[static_cast<std::size_t>((bh * T + i) * d + x)], 0.0) << "out row " << i;
                ASSERT_EQ(dq[static_cast<std::size_t>((bh * T + i) * d + x)], 0.0) << "dq row " << i;
              }
            }
        }
}

// Padding rows may hold anything: NaN and ±Inf in a skipped row's q, row terms (row_bias,
// modulation_row) and d_out must leave every gradient of the fused kernels finite and bitwise the
// same as zeros there. The kernels stage whole tiles of q and dO for their products, and a 0 factor
// does not cancel a non-finite operand (0·NaN = NaN): a skipped row's values must be staged as
// zeros, not just given dS = 0.
TEST(CudaFlashAttention, NonFiniteSkippedRowsReachNoGradient) {
  GATTN_REQUIRE_DEVICE();
  const std::int64_t B = 2, H = 2, T = 130;
  std::uint64_t seed = 13000;
  for (std::int64_t d : {32, 128})
    for (const Kind& c : {kKinds[2], kKinds[6]})
      for (int pattern : {0, 1}) {
        SCOPED_TRACE(std::string(c.name) + " d=" + std::to_string(d) + " mask " + std::to_string(pattern));
        const Inputs base = make_inputs(c, B, H, T, d, seed += 10);
        const Tensor active = active_mask(pattern, B, T, seed + 7);
        const std::vector<double> act = active.to_vector();
        // `t` ([B, H, T, …]) with the skipped rows' entries NaN, +Inf and −Inf in turn (or 0).
        auto fill_skipped = [&](const Tensor& t, bool poison) {
          if (!t.defined()) return t;
          std::vector<double> v = t.to_vector();
          const std::int64_t width = static_cast<std::int64_t>(v.size()) / (B * H * T);
          const double bad[] = {NAN, INFINITY, -INFINITY};
          for (std::int64_t r = 0; r < B * H * T; ++r) {
            const std::int64_t bh = r / T, i = r % T;
            if (act[static_cast<std::size_t>((bh / H) * T + i)] == 0.0)
              std::fill_n(v.begin() + r * width, width, poison ? bad[i % 3] : 0.0);
          }
          return Tensor::from(v, t.shape(), t.dtype());
        };
        const Tensor d_out = frand({B, H, T, d}, seed + 8);
        std::vector<Tensor> grads[2];
        for (bool poison : {false, true}) {
          Inputs in = base;
          in.q = fill_skipped(base.q, poison);
          in.row_bias = fill_skipped(base.row_bias, poison);
          in.mod_row = fill_skipped(base.mod_row, poison);
          grads[poison ? 1 : 0] = run_case(c, leaves(in, DType::bf16, DType::f32, Device::cuda),
                                           fill_skipped(d_out, poison).to(DType::bf16), 5, active)
                                      .grads;
        }
        for (std::size_t i = 0; i < grads[0].size(); ++i) {
          if (!grads[1][i].defined()) continue;
          for (double x : grads[1][i].to_vector()) ASSERT_TRUE(std::isfinite(x)) << kGradNames[i];
          EXPECT_TRUE(test::same_bits(grads[1][i], grads[0][i])) << kGradNames[i];
        }
      }
}

// Not causal: every query sees all Tk keys (the tail key tile masked), with query and key lengths
// of their own (separate strides, grids and d_alpha partials per key block). Output, statistics
// (the sink counts query 0 too) and every gradient with the bounds above; then the row-entropy
// output and its gradient with skipped query rows, through f32 tensors under autocast.
const Kind kNotCausalKinds[] = {
    {"not_causal", false, false, false, false, 0, false},
    {"not_causal_all_terms", true, true, true, false, 0, false},
    {"not_causal_modulation_noise", false, false, true, true, 0, false},
};
const std::pair<std::int64_t, std::int64_t> kQueryKeyLengths[] = {{1, 1},    {37, 37}, {5, 9},  {17, 3},
                                                                  {130, 70}, {3, 130}, {64, 65}};

TEST(CudaFlashAttention, NotCausalAndCrossMatchTheCpuOp) {
  GATTN_REQUIRE_DEVICE();
  const std::int64_t B = 2, H = 2;
  std::uint64_t seed = 30000;
  for (std::int64_t d : {32, 128})
    for (const auto& [Tq, Tk] : kQueryKeyLengths)
      for (const Kind& c : kNotCausalKinds) {
        SCOPED_TRACE(std::string(c.name) + " d=" + std::to_string(d) + " Tq=" + std::to_string(Tq) +
                     " Tk=" + std::to_string(Tk));
        const Inputs in = make_inputs(c, B, H, Tq, d, seed += 10, Tk);
        const Tensor d_out = frand({B, H, Tq, d}, seed + 9).to(DType::bf16);
        const Outcome want = run_case(c, leaves(in, DType::f64, DType::f64, Device::cpu), d_out.to(DType::f64), 77);
        const Outcome got = run_case(c, leaves(in, DType::bf16, DType::f32, Device::cuda), d_out, 77);
        EXPECT_TRUE(close(got.out, want.out, std::ldexp(1.0, -7), 0.0, "out"));
        // One key: the logit gradients vanish exactly, as at T = 1 above.
        const double grad_atol = Tk == 1 ? std::ldexp(static_cast<double>(d), -9) : 1e-4;
        for (std::size_t i = 0; i < got.grads.size(); ++i)
          EXPECT_TRUE(close_grad(got.grads, want.grads, i, grad_atol, std::ldexp(1.0, -5), kGradNames[i]));
        expect_same_stats(got.stats, want.stats);
        EXPECT_EQ(got.stats.sink_count, B * H * Tq);
      }
}

TEST(CudaFlashAttention, NotCausalRowEntropyWithSkippedRowsMatchesTheCpuOp) {
  GATTN_REQUIRE_DEVICE();
  const std::int64_t B = 2, H = 2;
  std::uint64_t seed = 31000;
  for (std::int64_t d : {32, 128})
    for (const auto& [Tq, Tk] : {std::pair<std::int64_t, std::int64_t>{130, 70}, {5, 130}})
      for (const Kind& c : kNotCausalKinds) {
        SCOPED_TRACE(std::string(c.name) + " d=" + std::to_string(d) + " Tq=" + std::to_string(Tq) +
                     " Tk=" + std::to_string(Tk));
        const Inputs in = make_inputs(c, B, H, Tq, d, seed += 10, Tk);
        const Tensor active = active_mask(0, B, Tq, seed + 7);
        const Tensor g_out = frand({B, H, Tq, d}, seed + 8), g_ent = frand({B, H, Tq}, seed + 9);
        ops::AttentionOptions options;
        options.causal = false;
        options.active_queries = active;
        expect_row_entropy_matches_cpu(c, in, options, g_out, g_ent, true);
      }
}

// Grouped query heads: k and v [B, H_kv, Tk, d] read in place by each group of H / H_kv query
// heads, dK and dV summed over the group inside one block of the dK/dV kernel. Against the CPU op in
// f64 with the bounds above (dK and dV sum H / H_kv heads' terms, each bounded as before, so the
// same relative bound holds), for every kind, causal and not, with statistics.
TEST(CudaFlashAttention, GroupedQueryHeadsMatchTheCpuOp) {
  GATTN_REQUIRE_DEVICE();
  const std::int64_t B = 2, H = 4;
  std::uint64_t seed = 40000;
  for (std::int64_t Hkv : {1, 2})
    for (const auto& [d, T] : {std::pair<std::int64_t, std::int64_t>{32, 37}, {64, 130}, {128, 130}})
      for (const Kind& c : kKinds) {
        SCOPED_TRACE(std::string(c.name) + " H_kv=" + std::to_string(Hkv) + " d=" + std::to_string(d) +
                     " T=" + std::to_string(T));
        const Inputs in = make_inputs(c, B, H, T, d, seed += 10, 0, Hkv);
        const Tensor d_out = frand({B, H, T, d}, seed + 9).to(DType::bf16);
        const Outcome want = run_case(c, leaves(in, DType::f64, DType::f64, Device::cpu), d_out.to(DType::f64), 77);
        const Outcome got = run_case(c, leaves(in, DType::bf16, DType::f32, Device::cuda), d_out, 77);
        EXPECT_TRUE(close(got.out, want.out, std::ldexp(1.0, -7), 0.0, "out"));
        for (std::size_t i = 0; i < got.grads.size(); ++i) {
          if (got.grads[i].defined()) {
            EXPECT_EQ(got.grads[i].shape(), want.grads[i].shape()) << kGradNames[i];
          }
          EXPECT_TRUE(close_grad(got.grads, want.grads, i, 1e-4, std::ldexp(1.0, -5), kGradNames[i]));
        }
        expect_same_stats(got.stats, want.stats);
      }
  for (std::int64_t Hkv : {1, 2})
    for (const auto& [Tq, Tk] : {std::pair<std::int64_t, std::int64_t>{17, 3}, {130, 70}})
      for (const Kind& c : kNotCausalKinds) {
        SCOPED_TRACE(std::string(c.name) + " H_kv=" + std::to_string(Hkv) + " Tq=" + std::to_string(Tq) +
                     " Tk=" + std::to_string(Tk));
        const Inputs in = make_inputs(c, B, H, Tq, 32, seed += 10, Tk, Hkv);
        const Tensor d_out = frand({B, H, Tq, 32}, seed + 9).to(DType::bf16);
        const Outcome want = run_case(c, leaves(in, DType::f64, DType::f64, Device::cpu), d_out.to(DType::f64), 77);
        const Outcome got = run_case(c, leaves(in, DType::bf16, DType::f32, Device::cuda), d_out, 77);
        EXPECT_TRUE(close(got.out, want.out, std::ldexp(1.0, -7), 0.0, "out"));
        for (std::size_t i = 0; i < got.grads.size(); ++i)
          EXPECT_TRUE(close_grad(got.grads, want.grads, i, 1e-4, std::ldexp(1.0, -5), kGradNames[i]));
        expect_same_stats(got.stats, want.stats);
      }
}

// Grouped query heads with skipped query rows and the row-entropy output (its gradient through
// f32 tensors under autocast), statistics included.
TEST(CudaFlashAttention, GroupedQueryHeadsWithSkippedRowsAndRowEntropyMatchTheCpuOp) {
  GATTN_REQUIRE_DEVICE();
  const std::int64_t B = 2, H = 4, T = 130, d = 32;
  std::uint64_t seed = 41000;
  for (std::int64_t Hkv : {1, 2})
    for (const Kind& c : {kKinds[0], kKinds[4], kKinds[6], kNotCausalKinds[1]}) {
      SCOPED_TRACE(std::string(c.name) + " H_kv=" + std::to_string(Hkv));
      const Inputs in = make_inputs(c, B, H, T, d, seed += 10, 0, Hkv);
      const Tensor g_out = frand({B, H, T, d}, seed + 8), g_ent = frand({B, H, T}, seed + 9);
      ops::AttentionOptions options;
      options.causal = c.causal;
      options.window = c.window;
      options.active_queries = active_mask(1, B, T, seed + 7);
      expect_row_entropy_matches_cpu(c, in, options, g_out, g_ent, true);
    }
}

TEST(CudaFlashAttention, GroupedQueryHeadsBackwardIsBitwiseDeterministic) {
  GATTN_REQUIRE_DEVICE();
  const Kind& c = kKinds[6];
  expect_bitwise_deterministic(c, make_inputs(c, 2, 4, 130, 64, 42000, 0, 1),
                               frand({2, 4, 130, 64}, 42001).to(DType::bf16));
}

// bf16 inputs the kernels do not take (head dim 24, or the modulation entropy output) run the
// composed attention in f32 and still hand back bf16 outputs and gradients.
// Adaptive computation pruning with a forget gate's fast decay (per-step log σ in [−0.3, −0.1]):
// the kernels build the CPU's tile plan and skip the same pairs, so they match the pruned CPU op
// within the usual bf16 bounds, and the statistics count the same pairs. d = 128 walks 32-row inner
// tiles inside the plan's 64-row ones; the window and a skipped row move the plan's first tiles.
// (The skipped probability is far below the bf16 bound here: the next test shows the kernels
// really pass over the pairs.)
TEST(CudaFlashAttention, PrunedTilesMatchThePrunedCpuOp) {
  GATTN_REQUIRE_DEVICE();
  const std::int64_t B = 1, H = 2, T = 320;
  std::uint64_t seed = 5000;
  for (std::int64_t d : {64, 128})
    for (std::int64_t window : {0, 200}) {
      SCOPED_TRACE("d=" + std::to_string(d) + " window=" + std::to_string(window));
      Kind c{"forget_pruned", false, true, false, false, window};
      c.prune_threshold = 1e-3;
      Inputs in = make_inputs(c, B, H, T, d, seed += 10);
      const Tensor cum = ops::cumsum(frand({B, H, T}, seed + 8, -0.3, -0.1), 2);
      in.row_bias = cum;
      in.col_bias = ops::neg(cum);
      std::vector<std::int32_t> rows(static_cast<std::size_t>(B * T), 1);
      rows[200] = 0;
      const Tensor active = Tensor::from_ints(rows, {B, T});
      const Tensor d_out = frand({B, H, T, d}, seed + 9).to(DType::bf16);
      const Outcome want =
          run_case(c, leaves(in, DType::f64, DType::f64, Device::cpu), d_out.to(DType::f64), 77, active);
      const Outcome got = run_case(c, leaves(in, DType::bf16, DType::f32, Device::cuda), d_out, 77, active);
      EXPECT_GT(want.stats.pruned_tiles, 0);
      EXPECT_EQ(got.stats.pruned_tiles, want.stats.pruned_tiles);
      EXPECT_EQ(got.stats.visited_tiles, want.stats.visited_tiles);
      EXPECT_TRUE(close(got.out, want.out, std::ldexp(1.0, -7), 0.0, "out"));
      for (std::size_t i = 0; i < got.grads.size(); ++i)
        EXPECT_TRUE(close_grad(got.grads, want.grads, i, 1e-4, std::ldexp(1.0, -5), kGradNames[i]));
      expect_same_stats(got.stats, want.stats);
    }
}

bool same_bits(const Tensor& a, const Tensor& b) { return a.to_vector() == b.to_vector(); }

// The kernels really pass over the pruned pairs, forward and backward. With the fast decay every
// pair two or more tiles back is pruned, so the output of query tiles 2… reads nothing of key tile
// 0's values, and key tile 0's dV nothing of those queries' output gradient: changing them leaves
// those bits as they were (f32 under autocast, whose f32 results show any change), while without
// pruning they move.
TEST(CudaFlashAttention, PrunedPairsReadNeitherTheirValuesNorTheirOutputGradients) {
  GATTN_REQUIRE_DEVICE();
  const std::int64_t B = 1, H = 2, T = 320, d = 64;
  for (double theta : {1e-3, 0.0}) {
    SCOPED_TRACE("theta=" + std::to_string(theta));
    Kind c{"forget_pruned", false, true, false, false, 0};
    c.prune_threshold = theta;
    Inputs in = make_inputs(c, B, H, T, d, 6000);
    const Tensor cum = ops::cumsum(frand({B, H, T}, 6008, -0.3, -0.1), 2);
    in.row_bias = cum;
    in.col_bias = ops::neg(cum);
    const Tensor d_out = frand({B, H, T, d}, 6009);
    Inputs moved = in;
    moved.v = ops::concat({ops::add_scalar(ops::slice(in.v, 2, 0, 64), 0.5), ops::slice(in.v, 2, 64, T)}, 2);
    const Tensor d_out_moved =
        ops::concat({ops::slice(d_out, 2, 0, 128), ops::mul_scalar(ops::slice(d_out, 2, 128, T), 0.5)}, 2);
    Outcome a, b;
    {
      ops::AutocastScope scope(ops::ComputePrecision::bf16);
      a = run_case(c, leaves(in, DType::f32, DType::f32, Device::cuda), d_out, 5);
      b = run_case(c, leaves(moved, DType::f32, DType::f32, Device::cuda), d_out_moved, 5);
    }
    const bool same_out = same_bits(ops::slice(a.out, 2, 128, T), ops::slice(b.out, 2, 128, T));
    const bool same_dv = same_bits(ops::slice(a.grads[2], 2, 0, 64), ops::slice(b.grads[2], 2, 0, 64));
    if (theta > 0) {
      EXPECT_EQ(a.stats.pruned_tiles, 6 * B * H);  // (2, 0), (3, 0), (3, 1), (4, 0), (4, 1), (4, 2)
      EXPECT_TRUE(same_out);
      EXPECT_TRUE(same_dv);
    } else {
      EXPECT_FALSE(same_out);
      EXPECT_FALSE(same_dv);
    }
  }
}

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
    EXPECT_TRUE(close_grad(got.grads, want.grads, i, 1e-4, std::ldexp(1.0, -5), kGradNames[i]));
  }
}

}  // namespace
}  // namespace gattn
