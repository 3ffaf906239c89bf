// Adaptive computation pruning of the fused CPU attention (AttentionOptions::prune_threshold, the
// bound in ops/attention/attention.h and ops/attention/prune_plan.h), with the forget gate's terms
// (row_bias c, col_bias −c, c a prefix sum of log σ) decaying fast enough that whole tiles fall
// below θ: the output stays within the stated bound of the unpruned one, every skipped probability
// is below θ, the gradient is exactly that of the softmax with the skipped tiles masked out, θ = 0
// (and a θ that skips nothing) gives the unpruned kernels' bits, the statistics count the pairs, and
// bad thresholds are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <limits>
#include <vector>

#include "ops/attention/attention.h"
#include "ops/attention/cpu/flash_attention.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/nn_functional.h"
#include "ops/reduce.h"
#include "ops/scan.h"
#include "ops/shape.h"
#include "test_util.h"

namespace gattn {
namespace {

// q, k, v in [−1, 1]; the forget gate's terms from per-step log σ(f) in [decay_lo, decay_hi].
struct Case {
  Tensor q, k, v, row_bias, col_bias;
  ops::AttentionTerms terms() const {
    ops::AttentionTerms t;
    t.row_bias = row_bias;
    t.col_bias = col_bias;
    return t;
  }
};

Case make_case(std::int64_t B, std::int64_t H, std::int64_t T, std::int64_t d, std::uint64_t seed, double decay_lo,
               double decay_hi, DType dtype = DType::f64) {
  Case c;
  c.q = test::rand({B, H, T, d}, seed, -1, 1, dtype);
  c.k = test::rand({B, H, T, d}, seed + 1, -1, 1, dtype);
  c.v = test::rand({B, H, T, d}, seed + 2, -1, 1, dtype);
  const Tensor cum = ops::cumsum(test::rand({B, H, T}, seed + 3, decay_lo, decay_hi, dtype), 2);
  c.row_bias = cum;
  c.col_bias = ops::neg(cum);
  return c;
}

// The CPU kernel's parameters for a case (to rebuild the plan the op uses).
cpu::FlashAttentionParams<double> params_of(const Case& c, double theta) {
  cpu::FlashAttentionParams<double> p;
  p.B = c.q.size(0);
  p.H = c.q.size(1);
  p.H_kv = c.k.size(1);
  p.Tq = c.q.size(2);
  p.Tk = c.k.size(2);
  p.d = c.q.size(3);
  p.scale = 1.0 / std::sqrt(static_cast<double>(p.d));
  p.q = c.q.data<double>();
  p.k = c.k.data<double>();
  p.v = c.v.data<double>();
  p.row_bias = c.row_bias.data<double>();
  p.col_bias = c.col_bias.data<double>();
  p.prune_threshold = theta;
  return p;
}

ops::AttentionOptions pruned(double theta, ops::AttentionStats* stats = nullptr) {
  ops::AttentionOptions o;
  o.prune_threshold = theta;
  o.stats = stats;
  return o;
}

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.to_vector(), y = b.to_vector();
  if (x.size() != y.size()) return false;
  for (std::size_t i = 0; i < x.size(); ++i)
    if (std::memcmp(&x[i], &y[i], sizeof(double)) != 0) return false;
  return true;
}

TEST(AttentionPrune, OutputStaysWithinTheBoundAndSkippedProbabilitiesAreBelowTheta) {
  const std::int64_t B = 1, H = 2, T = 320, d = 16;
  const double theta = 1e-3;
  const Case c = make_case(B, H, T, d, 11, -0.3, -0.1);
  const Tensor full = ops::flash_attention(c.q, c.k, c.v, c.terms()).out;
  ops::AttentionStats stats;
  const Tensor cut = ops::flash_attention(c.q, c.k, c.v, c.terms(), pruned(theta, &stats)).out;
  // Five query tiles: 1 + 2 + … + 5 = 15 causal pairs per head, those two or more tiles back pruned.
  EXPECT_EQ(stats.pruned_tiles + stats.visited_tiles, 15 * B * H);
  EXPECT_GT(stats.pruned_tiles, 0);
  const std::vector<std::uint8_t> plan = cpu::prune_plan(params_of(c, theta));
  const std::int64_t n_t = (T + 63) / 64;
  const std::vector<double> q = c.q.to_vector(), k = c.k.to_vector(), v = c.v.to_vector();
  const std::vector<double> r = c.row_bias.to_vector(), cb = c.col_bias.to_vector();
  const std::vector<double> y = full.to_vector(), yp = cut.to_vector();
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  double worst_ratio = 0, worst_err = 0, worst_p = 0;
  std::int64_t skipped_entries = 0;
  for (std::int64_t bh = 0; bh < B * H; ++bh) {
    std::vector<double> vmax(static_cast<std::size_t>(d), 0.0);
    for (std::int64_t j = 0; j < T; ++j)
      for (std::int64_t x = 0; x < d; ++x)
        vmax[static_cast<std::size_t>(x)] =
            std::max(vmax[static_cast<std::size_t>(x)], std::abs(v[static_cast<std::size_t>((bh * T + j) * d + x)]));
    for (std::int64_t i = 0; i < T; ++i) {
      std::vector<double> S(static_cast<std::size_t>(i + 1));
      double m = -std::numeric_limits<double>::infinity();
      for (std::int64_t j = 0; j <= i; ++j) {
        double s = 0;
        for (std::int64_t x = 0; x < d; ++x)
          s += q[static_cast<std::size_t>((bh * T + i) * d + x)] * k[static_cast<std::size_t>((bh * T + j) * d + x)];
        S[static_cast<std::size_t>(j)] =
            s * scale + r[static_cast<std::size_t>(bh * T + i)] + cb[static_cast<std::size_t>(bh * T + j)];
        m = std::max(m, S[static_cast<std::size_t>(j)]);
      }
      double l = 0;
      for (double s : S) l += std::exp(s - m);
      const double lse = m + std::log(l);
      double delta = 0;
      std::int64_t n_skipped = 0;
      for (std::int64_t j = 0; j <= i; ++j)
        if (plan[static_cast<std::size_t>((bh * n_t + i / 64) * n_t + j / 64)] == ops::kTileSkip) {
          const double P = std::exp(S[static_cast<std::size_t>(j)] - lse);
          worst_p = std::max(worst_p, P);
          EXPECT_LT(P, theta);
          delta += P;
          ++n_skipped;
        }
      skipped_entries += n_skipped;
      EXPECT_LE(delta, static_cast<double>(n_skipped) * theta);
      for (std::int64_t x = 0; x < d; ++x) {
        const std::size_t at = static_cast<std::size_t>((bh * T + i) * d + x);
        const double err = std::abs(y[at] - yp[at]), bound = 2 * delta * vmax[static_cast<std::size_t>(x)];
        EXPECT_LE(err, bound + 1e-14) << "row " << i << " coordinate " << x;
        worst_err = std::max(worst_err, err);
        if (bound > 0) worst_ratio = std::max(worst_ratio, err / bound);
      }
    }
  }
  EXPECT_GT(skipped_entries, 0);
  std::cout << "pruned " << stats.pruned_tiles << " of " << stats.pruned_tiles + stats.visited_tiles
            << " tile pairs; max |Δy| " << worst_err << ", max |Δy|/bound " << worst_ratio << ", max skipped P "
            << worst_p << " (θ " << theta << ")\n";
}

// The same causal softmax attention, composed, with the pruned pairs' logits at −1e30 (weight 0,
// gradient 0): the pruned op must be its exact function and gradient.
Tensor masked_reference(const Case& c, const std::vector<std::uint8_t>& plan) {
  const std::int64_t B = c.q.size(0), H = c.q.size(1), T = c.q.size(2), d = c.q.size(3), n_t = (T + 63) / 64;
  std::vector<double> mask(static_cast<std::size_t>(B * H * T * T), 0.0);
  for (std::int64_t bh = 0; bh < B * H; ++bh)
    for (std::int64_t i = 0; i < T; ++i)
      for (std::int64_t j = 0; j < T; ++j)
        if (j > i || plan[static_cast<std::size_t>((bh * n_t + i / 64) * n_t + j / 64)] == ops::kTileSkip)
          mask[static_cast<std::size_t>((bh * T + i) * T + j)] = -1e30;
  Tensor S = ops::mul_scalar(ops::matmul(c.q, c.k, false, true), 1.0 / std::sqrt(static_cast<double>(d)));
  S = S + ops::unsqueeze(c.row_bias, 3) + ops::unsqueeze(c.col_bias, 2) + Tensor::from(mask, {B, H, T, T}, DType::f64);
  return ops::matmul(ops::softmax(S), c.v);
}

TEST(AttentionPrune, GradientIsThatOfTheSoftmaxWithThePrunedTilesMasked) {
  const double theta = 1e-3;
  Case c = make_case(1, 2, 200, 8, 21, -0.3, -0.1);
  for (Tensor* t : {&c.q, &c.k, &c.v, &c.row_bias, &c.col_bias}) {
    *t = t->detach();
    t->set_requires_grad(true);
  }
  const Tensor w = test::rand(c.q.shape(), 99);
  ops::AttentionStats stats;
  const Tensor y = ops::flash_attention(c.q, c.k, c.v, c.terms(), pruned(theta, &stats)).out;
  ASSERT_GT(stats.pruned_tiles, 0);
  ops::sum(y * w).backward();
  std::vector<Tensor> got;
  for (Tensor* t : {&c.q, &c.k, &c.v, &c.row_bias, &c.col_bias}) {
    got.push_back(t->grad());
    t->zero_grad();
  }
  const Tensor ref = masked_reference(c, cpu::prune_plan(params_of(c, theta)));
  EXPECT_TRUE(test::all_close(y, ref, 1e-12, 1e-10));
  ops::sum(ref * w).backward();
  const char* names[] = {"q", "k", "v", "row_bias", "col_bias"};
  std::size_t n = 0;
  for (Tensor* t : {&c.q, &c.k, &c.v, &c.row_bias, &c.col_bias}) {
    EXPECT_TRUE(test::all_close(got[n], t->grad(), 1e-11, 1e-9)) << names[n];
    ++n;
  }
}

// Output and every gradient of one run, with the forget terms and a modulation (the general row
// loops), a window and a skipped row.
std::vector<Tensor> run_all(const Case& base, DType dtype, double theta, ops::AttentionStats* stats) {
  Case c;
  std::vector<Tensor*> leaves = {&c.q, &c.k, &c.v, &c.row_bias, &c.col_bias};
  const std::vector<const Tensor*> from = {&base.q, &base.k, &base.v, &base.row_bias, &base.col_bias};
  for (std::size_t n = 0; n < leaves.size(); ++n) {
    *leaves[n] = from[n]->to(dtype).detach();
    leaves[n]->set_requires_grad(true);
  }
  const std::int64_t B = c.q.size(0), H = c.q.size(1), T = c.q.size(2);
  ops::AttentionTerms terms = c.terms();
  Tensor mod_row = test::rand({B, H, T}, 5, -2, 2, dtype).detach(), mod_col = test::rand({B, H, T}, 6, -2, 2, dtype);
  mod_row.set_requires_grad(true);
  terms.modulation_row = mod_row;
  terms.modulation_col = mod_col;
  terms.modulation_alpha = Tensor::full({1}, 0.6, dtype);
  std::vector<std::int32_t> active(static_cast<std::size_t>(B * T), 1);
  active[70] = 0;
  ops::AttentionOptions o = pruned(theta, stats);
  o.window = 150;
  o.active_queries = Tensor::from_ints(active, {B, T});
  o.entropy_output = true;
  const ops::AttentionResult r = ops::flash_attention(c.q, c.k, c.v, terms, o);
  (ops::sum(r.out * test::rand(r.out.shape(), 7, -1, 1, dtype)) + ops::sum(r.row_entropy)).backward();
  std::vector<Tensor> out{r.out, r.row_entropy};
  for (Tensor* t : leaves) out.push_back(t->grad());
  out.push_back(mod_row.grad());
  return out;
}

TEST(AttentionPrune, ZeroThresholdAndAThresholdThatSkipsNothingGiveTheUnprunedBits) {
  // A mild decay: no tile comes near θ = 1e-300, so the plan is built and walks every pair.
  const Case c = make_case(1, 2, 260, 16, 31, -0.02, 0.0);
  for (DType dtype : {DType::f64, DType::f32}) {
    ops::AttentionStats off, none;
    const std::vector<Tensor> a = run_all(c, dtype, 0.0, &off);
    const std::vector<Tensor> b = run_all(c, dtype, 1e-300, &none);
    EXPECT_EQ(off.pruned_tiles + off.visited_tiles, 0);  // nothing counted without pruning
    EXPECT_EQ(none.pruned_tiles, 0);
    EXPECT_GT(none.visited_tiles, 0);
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t n = 0; n < a.size(); ++n) EXPECT_TRUE(bitwise_equal(a[n], b[n])) << "result " << n;
  }
}

TEST(AttentionPrune, StatisticsCountThePairsOfEveryHeadWithWindowAndSkippedRows) {
  const Case c = make_case(2, 2, 256, 8, 41, -0.3, -0.1);
  ops::AttentionStats stats;
  std::vector<std::int32_t> active(2 * 256, 1);
  for (std::int64_t i = 64; i < 128; ++i) active[static_cast<std::size_t>(i)] = 0;  // sequence 0's tile 1: no row
  ops::AttentionOptions o = pruned(1e-3, &stats);
  o.active_queries = Tensor::from_ints(active, {2, 256});
  ops::flash_attention(c.q, c.k, c.v, c.terms(), o);
  // 4 query tiles, 1 + 2 + 3 + 4 = 10 pairs per head; sequence 0's heads lack tile 1's 2 pairs.
  EXPECT_EQ(stats.pruned_tiles + stats.visited_tiles, 2 * 10 + 2 * 8);
  EXPECT_GT(stats.pruned_tiles, 0);
  // A window of 64: rows see at most the previous tile, so nothing is left to prune or walk beyond it.
  ops::AttentionStats windowed;
  ops::AttentionOptions w = pruned(1e-3, &windowed);
  w.window = 64;
  ops::flash_attention(c.q, c.k, c.v, c.terms(), w);
  EXPECT_EQ(windowed.pruned_tiles + windowed.visited_tiles, 4 * (1 + 2 + 2 + 2));
}

TEST(AttentionPrune, RefusesBadThresholdsAndNonCausalAttention) {
  const Case c = make_case(1, 1, 8, 4, 51, -0.3, -0.1);
  for (double bad : {-0.1, 1.0, 2.0, std::numeric_limits<double>::quiet_NaN()})
    EXPECT_TRUE(test::contains(test::error_of([&] { ops::flash_attention(c.q, c.k, c.v, c.terms(), pruned(bad)); }),
                               "prune_threshold"))
        << bad;
  ops::AttentionOptions o = pruned(0.01);
  o.causal = false;
  EXPECT_TRUE(test::contains(test::error_of([&] { ops::flash_attention(c.q, c.k, c.v, {}, o); }),
                             "prune_threshold needs causal attention"));
}

}  // namespace
}  // namespace gattn
