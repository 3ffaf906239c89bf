// The fused attention (ops::flash_attention) against the composite reference
// (tests/reference/attention_reference.h) for every logit/modulation term and window, forward and
// all gradients (through out, row_entropy and modulation_entropy); gradchecks of the fused op;
// statistics; skipped query rows (active_queries); the neutral settings that must reduce to plain
// attention; f32 vs f64; the modulation noise; the errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "ops/attention/attention.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/scan.h"
#include "ops/shape.h"
#include "ops/unary.h"
#include "reference/attention_leaves.h"
#include "reference/attention_reference.h"
#include "test_util.h"

namespace gattn {
namespace {

// Which terms an input set carries (bit flags, combinable), in the forms the model's gates give them:
//  kCol: a column bias log σ(f_j) (the score gate);
//  kRel: a prefix sum c of log σ(f) as row_bias = c, col_bias = −c, i.e. c_i − c_j (the forget gate);
//  kMod: the modulation terms (the pair gate);
//  kRow: an independent random row bias (no gate makes one alone; P cannot depend on it).
// kCol | kRel gives col_bias = log σ(f) − c.
constexpr unsigned kNone = 0, kCol = 1, kRel = 2, kMod = 4, kRow = 8, kAll = kCol | kRel | kMod;

// T is the query length; Tk the key length, 0 meaning T (self-attention).
struct Dims {
  std::int64_t B, H, T, d, Tk = 0;
  std::int64_t keys() const { return Tk ? Tk : T; }
};

std::string dims_str(const Dims& s) {
  return "B=" + std::to_string(s.B) + " H=" + std::to_string(s.H) + " T=" + std::to_string(s.T) +
         (s.Tk ? " Tk=" + std::to_string(s.Tk) : std::string()) + " d=" + std::to_string(s.d);
}

using Inputs = test::AttentionLeaves;
constexpr auto& kLeafNames = test::kAttentionLeafNames;

// Leaf tensors for q, k, v and the chosen terms, each requiring grad. The terms have the shapes and
// ranges the model produces: log σ(f) ≤ 0 column biases, a cumulative sum of log σ(f) (decreasing)
// as row bias and its negation in the column bias, modulation logits of either sign, α in (0, 1).

// alpha_by_head: α per head ([H] values) in place of the one α.
Inputs make_inputs(const Dims& s, unsigned terms, std::uint64_t seed, double tau = 1.0, double alpha = 0.7,
                   const std::vector<double>& alpha_by_head = {}) {
  NoGradGuard no_grad;
  Inputs in;
  const std::int64_t Tk = s.keys(), Tmax = std::max(s.T, Tk);
  const Shape qs{s.B, s.H, s.T, s.d}, ks{s.B, s.H, Tk, s.d}, rs{s.B, s.H, s.T}, cs{s.B, s.H, Tk};
  in.q = test::randn(qs, seed, 1.2);
  in.k = test::randn(ks, seed + 1, 1.2);
  in.v = test::randn(ks, seed + 2);
  if (terms & kCol) in.col_bias = ops::log_sigmoid(test::randn(cs, seed + 3, 2.0));
  if (terms & kRel) {
    // One prefix sum over the longer of the two lengths: rows take its first T values, columns its first Tk.
    const Tensor c = ops::cumsum(ops::log_sigmoid(ops::add_scalar(test::randn({s.B, s.H, Tmax}, seed + 4), 2.0)), 2);
    in.row_bias = ops::slice(c, 2, 0, s.T);
    const Tensor c_k = ops::slice(c, 2, 0, Tk);
    in.col_bias = in.col_bias.defined() ? in.col_bias - c_k : ops::neg(c_k);
  }
  if (terms & kRow)
    in.row_bias = in.row_bias.defined() ? in.row_bias + test::randn(rs, seed + 8) : test::randn(rs, seed + 8);
  if (terms & kMod) {
    in.mod_row = test::randn(rs, seed + 5, 1.5);
    in.mod_col = test::randn(cs, seed + 6, 1.5);
    in.mod_alpha =
        alpha_by_head.empty() ? Tensor::from({alpha}, {1}, DType::f64) : Tensor::from(alpha_by_head, {s.H}, DType::f64);
    in.tau = tau;
  }
  for (Tensor t : in.leaves())
    if (t.defined()) t.set_requires_grad(true);
  return in;
}

Inputs to_dtype(const Inputs& in, DType dt) {
  Inputs out = in;
  Tensor* fields[] = {&out.q, &out.k, &out.v, &out.row_bias, &out.col_bias, &out.mod_row, &out.mod_col, &out.mod_alpha};
  for (Tensor* t : fields)
    if (t->defined()) *t = t->detach().to(dt).clone();
  return out;
}

using AttentionFn = ops::AttentionResult (*)(const Tensor&, const Tensor&, const Tensor&, const ops::AttentionTerms&,
                                             const ops::AttentionOptions&);

// Which outputs feed the scalar loss Σ out⊙W1 + Σ row_entropy⊙W2 + Σ modulation_entropy⊙W3
// + Σ modulation_sum⊙W4 (`gate`: both modulation outputs).
struct LossParts {
  bool out = true, entropy = true, gate = true;
};

struct RunResult {
  ops::AttentionResult result;
  std::vector<Tensor> grads;  // .grad of each leaf (undefined where absent or not reached)
};

// Runs one attention implementation on `in`, backpropagates the weighted loss and collects (then
// clears) the leaves' gradients.
RunResult run(AttentionFn fn, const Inputs& in, const ops::AttentionOptions& opt, LossParts parts = {},
              std::uint64_t seed = 99, Generator* noise = nullptr, Generator* dropout_noise = nullptr) {
  RunResult r;
  r.result = fn(in.q, in.k, in.v, in.terms(noise, dropout_noise), opt);
  const Shape& qs = in.q.shape();
  const DType dt = in.q.dtype();
  Tensor loss;
  auto add = [&](const Tensor& term) { loss = loss.defined() ? loss + term : term; };
  if (parts.out) add(ops::sum(r.result.out * test::randn(qs, seed, 1.0, dt)));
  if (parts.entropy && r.result.row_entropy.defined())
    add(ops::sum(r.result.row_entropy * test::randn({qs[0], qs[1], qs[2]}, seed + 1, 1.0, dt)));
  if (parts.gate && r.result.modulation_entropy.defined())
    add(ops::sum(r.result.modulation_entropy * test::randn({qs[0], qs[1]}, seed + 2, 1.0, dt)));
  if (parts.gate && r.result.modulation_sum.defined())
    add(ops::sum(r.result.modulation_sum * test::randn({qs[0], qs[1]}, seed + 3, 1.0, dt)));
  if (loss.defined() && loss.grad_fn()) loss.backward();
  for (Tensor t : in.leaves()) {
    r.grads.push_back(t.defined() ? t.grad() : Tensor());
    if (t.defined()) t.zero_grad();
  }
  return r;
}

ops::AttentionOptions options_for(const Inputs& in, std::int64_t window, bool causal = true) {
  ops::AttentionOptions o;
  o.causal = causal;
  o.window = window;
  o.entropy_output = true;
  o.modulation_entropy = in.modulated();
  return o;
}

// The fused op and the reference agree on every output and every leaf's gradient.
void expect_matches_reference(const Inputs& in, const ops::AttentionOptions& opt, const std::string& what,
                              LossParts parts = {}, double tol = 1e-9) {
  SCOPED_TRACE(what);
  RunResult fused = run(ops::flash_attention, in, opt, parts);
  RunResult ref = run(test::reference_attention, in, opt, parts);
  EXPECT_TRUE(test::all_close(fused.result.out, ref.result.out, tol, tol)) << "out";
  ASSERT_EQ(fused.result.row_entropy.defined(), ref.result.row_entropy.defined());
  if (ref.result.row_entropy.defined()) {
    EXPECT_TRUE(test::all_close(fused.result.row_entropy, ref.result.row_entropy, tol, tol)) << "row_entropy";
  }
  ASSERT_EQ(fused.result.modulation_entropy.defined(), ref.result.modulation_entropy.defined());
  if (ref.result.modulation_entropy.defined()) {
    EXPECT_TRUE(test::all_close(fused.result.modulation_entropy, ref.result.modulation_entropy, tol, tol))
        << "modulation_entropy";
  }
  ASSERT_EQ(fused.result.modulation_sum.defined(), ref.result.modulation_sum.defined());
  if (ref.result.modulation_sum.defined()) {
    EXPECT_TRUE(test::all_close(fused.result.modulation_sum, ref.result.modulation_sum, tol, tol)) << "modulation_sum";
  }
  for (std::size_t i = 0; i < fused.grads.size(); ++i) {
    const Tensor& a = fused.grads[i];
    const Tensor& b = ref.grads[i];
    if (!b.defined()) {
      // Absent leaf, or a leaf the loss does not depend on: the fused op may report zeros.
      if (a.defined()) {
        EXPECT_TRUE(test::all_close(a, Tensor::zeros(a.shape(), a.dtype()), tol, 0)) << "d" << kLeafNames[i];
      }
      continue;
    }
    ASSERT_TRUE(a.defined()) << "d" << kLeafNames[i] << " missing from the fused op";
    EXPECT_TRUE(test::all_close(a, b, tol, tol)) << "d" << kLeafNames[i];
  }
}

// The shapes every kind is checked on: T = 1, T below, at and above the 64 tile, two tiles and a
// bit; B·H > 1; every head size the model uses.
const std::vector<Dims> kShapes = {{1, 1, 1, 16},  {2, 3, 3, 16},   {1, 2, 63, 32},
                                   {1, 2, 64, 64}, {1, 2, 65, 128}, {1, 2, 130, 32}};

void check_kind(unsigned terms, const std::vector<std::int64_t>& windows, double tau = 1.0, std::uint64_t seed = 1000) {
  for (const Dims& s : kShapes)
    for (std::int64_t w : windows) {
      Inputs in = make_inputs(s, terms, seed, tau);
      expect_matches_reference(in, options_for(in, w), dims_str(s) + " window=" + std::to_string(w));
      seed += 10;
    }
}

// ---- the reference itself, against scalar loops written straight from ops/attention/attention.h ----

TEST(AttentionReference, MatchesScalarLoops) {
  const Dims s{1, 2, 7, 3};
  const std::int64_t window = 4;
  Inputs in = make_inputs(s, kAll, 7, /*tau=*/0.8, /*alpha=*/0.6);
  ops::AttentionOptions opt = options_for(in, window);
  ops::AttentionResult r = test::reference_attention(in.q, in.k, in.v, in.terms(), opt);
  const std::vector<double> q = in.q.to_vector(), k = in.k.to_vector(), v = in.v.to_vector();
  const std::vector<double> rb = in.row_bias.to_vector(), cb = in.col_bias.to_vector();
  const std::vector<double> pr = in.mod_row.to_vector(), pc = in.mod_col.to_vector();
  const double alpha = 0.6, tau = 0.8;
  const std::vector<double> out = r.out.to_vector(), ent = r.row_entropy.to_vector(),
                            gent = r.modulation_entropy.to_vector();
  for (std::int64_t bh = 0; bh < s.B * s.H; ++bh) {
    double mod_entropy = 0;
    for (std::int64_t i = 0; i < s.T; ++i) {
      std::vector<double> S(static_cast<std::size_t>(s.T), -INFINITY);
      double mx = -INFINITY;
      for (std::int64_t j = 0; j <= i; ++j) {
        if (i - j >= window) continue;
        double dot = 0;
        for (std::int64_t x = 0; x < s.d; ++x) dot += q[((bh * s.T) + i) * s.d + x] * k[((bh * s.T) + j) * s.d + x];
        S[j] = dot / std::sqrt(3.0) + rb[bh * s.T + i] + cb[bh * s.T + j];
        mx = std::max(mx, S[j]);
      }
      double Z = 0;
      for (double x : S) Z += std::exp(x - mx);
      double H = 0;
      std::vector<double> y(static_cast<std::size_t>(s.d), 0.0);
      for (std::int64_t j = 0; j < s.T; ++j) {
        if (S[j] == -INFINITY) continue;
        const double P = std::exp(S[j] - mx) / Z;
        const double G = 1 / (1 + std::exp(-(pr[bh * s.T + i] + pc[bh * s.T + j]) / tau));
        const double A = P * (alpha * G + 1 - alpha);
        H -= A * std::log(A);
        mod_entropy -= G * std::log(G) + (1 - G) * std::log(1 - G);
        for (std::int64_t x = 0; x < s.d; ++x) y[x] += A * v[((bh * s.T) + j) * s.d + x];
      }
      for (std::int64_t x = 0; x < s.d; ++x) EXPECT_NEAR(out[(bh * s.T + i) * s.d + x], y[x], 1e-12);
      EXPECT_NEAR(ent[bh * s.T + i], H, 1e-12);
    }
    EXPECT_NEAR(gent[bh], mod_entropy, 1e-11);
  }
}

// ---- fused vs reference, forward and every gradient, f64 ----

TEST(AttentionVsReference, NoTerms) { check_kind(kNone, {0}); }
TEST(AttentionVsReference, ColBias) { check_kind(kCol, {0}); }
TEST(AttentionVsReference, RowAndColBiasAsPrefixDifference) { check_kind(kRel, {0}); }
TEST(AttentionVsReference, IndependentRowBias) { check_kind(kRow | kCol, {0, 5}); }
TEST(AttentionVsReference, Modulation) { check_kind(kMod, {0}); }
TEST(AttentionVsReference, ModulationTemperature) {
  check_kind(kMod, {0}, /*tau=*/0.5, 2000);
  check_kind(kMod, {0}, /*tau=*/2.5, 3000);
}
TEST(AttentionVsReference, HardModulation) {
  // M = α·1[G > θ] + 1 − α forward; the composed reference's straight-through form gives the soft
  // gradient through u, and dα through 1[G > θ]: the fused op must give the same.
  std::uint64_t seed = 4000;
  for (const Dims& s : kShapes)
    for (std::int64_t w : {0, 5}) {
      Inputs in = make_inputs(s, kAll, seed, 0.8);
      in.hard_threshold = 0.45;
      expect_matches_reference(in, options_for(in, w), dims_str(s) + " hard window=" + std::to_string(w));
      seed += 10;
    }
}
TEST(AttentionVsReference, ColBiasWithPrefixDifference) { check_kind(kCol | kRel, {0}); }
TEST(AttentionVsReference, ColBiasAndModulation) { check_kind(kCol | kMod, {0}); }
TEST(AttentionVsReference, AllTerms) { check_kind(kAll, {0}, 0.7); }
TEST(AttentionVsReference, Windows) { check_kind(kNone, {1, 5, 16}); }
TEST(AttentionVsReference, WindowsWithBiases) { check_kind(kCol | kRel, {1, 5, 16}); }
TEST(AttentionVsReference, WindowsWithModulation) { check_kind(kMod, {1, 5, 16}, 1.3); }
TEST(AttentionVsReference, WindowsWithAllTerms) { check_kind(kAll, {1, 5, 16, 64, 65, 200}); }

TEST(AttentionVsReference, BatchAndHeadsAcrossTiles) {
  // B·H = 6 heads, each spanning three query tiles, so tiles of different heads run side by side.
  const Dims s{2, 3, 140, 16};
  for (std::int64_t w : {0, 70}) {
    Inputs in = make_inputs(s, kAll, 4000 + static_cast<std::uint64_t>(w), 1.0);
    expect_matches_reference(in, options_for(in, w), "window=" + std::to_string(w));
  }
}

TEST(AttentionVsReference, LossFromEachOutputAlone) {
  // Only row_entropy or only modulation_entropy reaches the loss: the op's backward runs without dO.
  for (unsigned terms : {kNone, kMod, kAll})
    for (std::int64_t w : {0, 5}) {
      Inputs in = make_inputs({1, 2, 67, 16}, terms, 5000 + terms * 10 + static_cast<std::uint64_t>(w));
      const std::string what = "terms=" + std::to_string(terms) + " window=" + std::to_string(w);
      expect_matches_reference(in, options_for(in, w), what + " entropy only", {false, true, false});
      expect_matches_reference(in, options_for(in, w), what + " out only", {true, false, false});
      if (in.modulated())
        expect_matches_reference(in, options_for(in, w), what + " modulation entropy only", {false, false, true});
    }
}

TEST(AttentionVsReference, OptionalOutputsOff) {
  // Without entropy outputs only out exists, and its gradients still match.
  Inputs in = make_inputs({1, 2, 65, 32}, kAll, 5500);
  ops::AttentionOptions opt;
  opt.window = 9;
  ops::AttentionResult r = ops::flash_attention(in.q, in.k, in.v, in.terms(), opt);
  EXPECT_FALSE(r.row_entropy.defined());
  EXPECT_FALSE(r.modulation_entropy.defined());
  expect_matches_reference(in, opt, "no optional outputs");
  opt.modulation_entropy = true;  // modulation entropy without row entropy
  expect_matches_reference(in, opt, "modulation entropy only");
}

TEST(AttentionVsReference, SomeInputsWithoutGrad) {
  // Leaves that do not require grad get none; the others are unaffected.
  Inputs in = make_inputs({1, 2, 66, 16}, kAll, 5600);
  in.q.set_requires_grad(false);
  in.col_bias.set_requires_grad(false);
  in.mod_alpha.set_requires_grad(false);
  RunResult fused = run(ops::flash_attention, in, options_for(in, 0));
  EXPECT_FALSE(fused.grads[0].defined());
  EXPECT_FALSE(fused.grads[4].defined());
  EXPECT_FALSE(fused.grads[7].defined());
  expect_matches_reference(in, options_for(in, 0), "q, col_bias, alpha constant");
  Inputs only_v = make_inputs({1, 1, 20, 16}, kCol, 5700);
  for (Tensor t : only_v.leaves())
    if (t.defined()) t.set_requires_grad(false);
  only_v.v.set_requires_grad(true);
  expect_matches_reference(only_v, options_for(only_v, 0), "only v");
}

// With the modulation's noise on: the reference draws the same Philox words, so noisy forward and
// backward are comparable, and both advance the generator alike.
void expect_noise_matches_reference(const Inputs& in, const ops::AttentionOptions& opt, const std::string& what) {
  SCOPED_TRACE(what);
  Generator g_fused(77, 3), g_ref(77, 3);
  g_fused.reserve(8);  // start mid-stream
  g_ref.reserve(8);
  RunResult fused = run(ops::flash_attention, in, opt, {}, 99, &g_fused);
  RunResult ref = run(test::reference_attention, in, opt, {}, 99, &g_ref);
  EXPECT_EQ(g_fused.state().offset, g_ref.state().offset);
  EXPECT_TRUE(test::all_close(fused.result.out, ref.result.out, 1e-9, 1e-9));
  EXPECT_TRUE(test::all_close(fused.result.row_entropy, ref.result.row_entropy, 1e-9, 1e-9));
  EXPECT_TRUE(test::all_close(fused.result.modulation_entropy, ref.result.modulation_entropy, 1e-9, 1e-9));
  for (std::size_t i = 0; i < fused.grads.size(); ++i)
    EXPECT_TRUE(test::all_close(fused.grads[i], ref.grads[i], 1e-9, 1e-9)) << "d" << kLeafNames[i];
}

TEST(AttentionVsReference, PairNoiseMatchesReference) {
  Inputs in = make_inputs({2, 2, 70, 16}, kAll, 5800, 0.9);
  for (std::int64_t w : {0, 7}) expect_noise_matches_reference(in, options_for(in, w), "window " + std::to_string(w));
}

// ---- statistics ----

void expect_same_stats(const ops::AttentionStats& a, const ops::AttentionStats& b) {
  EXPECT_EQ(a.entropy_count, b.entropy_count);
  EXPECT_NEAR(a.entropy_sum, b.entropy_sum, 1e-9 * (1 + std::abs(b.entropy_sum)));
  EXPECT_EQ(a.sink_count, b.sink_count);
  EXPECT_NEAR(a.sink_sum, b.sink_sum, 1e-9 * (1 + std::abs(b.sink_sum)));
  EXPECT_EQ(a.modulation.count, b.modulation.count);
  EXPECT_NEAR(a.modulation.sum, b.modulation.sum, 1e-9 * (1 + std::abs(b.modulation.sum)));
  EXPECT_NEAR(a.modulation.sum_sq, b.modulation.sum_sq, 1e-9 * (1 + std::abs(b.modulation.sum_sq)));
  EXPECT_EQ(a.modulation.below_0_1, b.modulation.below_0_1);
  EXPECT_EQ(a.modulation.above_0_9, b.modulation.above_0_9);
}

TEST(AttentionStats, MatchReference) {
  for (unsigned terms : {kNone, kCol | kRel, kMod, kAll})
    for (std::int64_t w : {0, 1, 5, 16})
      for (const Dims& s : {Dims{1, 1, 1, 16}, Dims{2, 2, 9, 16}, Dims{1, 2, 130, 16}}) {
        SCOPED_TRACE("terms=" + std::to_string(terms) + " window=" + std::to_string(w) + " " + dims_str(s));
        Inputs in = make_inputs(s, terms, 6000 + terms + static_cast<std::uint64_t>(w));
        ops::AttentionStats fused, ref;
        ops::AttentionOptions opt;  // stats alone: no entropy output asked
        opt.window = w;
        opt.stats = &fused;
        ops::flash_attention(in.q, in.k, in.v, in.terms(), opt);
        opt.stats = &ref;
        test::reference_attention(in.q, in.k, in.v, in.terms(), opt);
        expect_same_stats(fused, ref);
        EXPECT_EQ(fused.entropy_count, s.B * s.H * s.T);
        EXPECT_EQ(fused.sink_count, s.B * s.H * (s.T - 1));
      }
}

TEST(AttentionVsReference, ModulationAlphaPerHead) {
  // α per head, 0 on some heads (the pair gate's `heads`): the fused op against the composed one,
  // every output and gradient, α's [H] gradient included, across tiles, windows and noise-free f64.
  std::uint64_t seed = 8100;
  for (const Dims& s : {Dims{1, 3, 5, 16}, Dims{2, 3, 70, 32}, Dims{1, 4, 130, 16}})
    for (std::int64_t w : {0, 5}) {
      std::vector<double> alpha(static_cast<std::size_t>(s.H));
      for (std::int64_t h = 0; h < s.H; ++h) alpha[static_cast<std::size_t>(h)] = h % 2 ? 0.0 : 0.3 + 0.2 * h;
      Inputs in = make_inputs(s, kMod | kCol, seed += 10, 1.0, 0.7, alpha);
      expect_matches_reference(in, options_for(in, w), dims_str(s) + " window=" + std::to_string(w));
    }
}

TEST(AttentionVsReference, ModulationAlphaZeroOnAHeadLeavesItPlain) {
  // A head with α = 0 is plain attention: its output is that of the unmodulated op.
  const Dims s{1, 2, 9, 16};
  Inputs gated = make_inputs(s, kMod, 8200, 1.0, 0.7, {0.8, 0.0});
  Inputs plain = gated;
  plain.mod_row = plain.mod_col = plain.mod_alpha = Tensor();
  const Tensor a = ops::flash_attention(gated.q, gated.k, gated.v, gated.terms()).out;
  const Tensor b = ops::flash_attention(plain.q, plain.k, plain.v, plain.terms()).out;
  EXPECT_TRUE(test::all_close(ops::slice(a, 1, 1, 2), ops::slice(b, 1, 1, 2), 1e-13, 1e-13));
  EXPECT_FALSE(test::all_close(ops::slice(a, 1, 0, 1), ops::slice(b, 1, 0, 1), 1e-6, 1e-6));
}

TEST(AttentionStats, ModulationByHeadMatchesReferenceAndAddsUpToThePool) {
  for (std::int64_t w : {0, 5}) {
    SCOPED_TRACE("window=" + std::to_string(w));
    const Dims s{2, 3, 70, 16};
    Inputs in = make_inputs(s, kMod, 8300 + static_cast<std::uint64_t>(w));
    ops::AttentionStats fused, ref;
    ops::AttentionOptions opt;
    opt.window = w;
    opt.stats = &fused;
    ops::flash_attention(in.q, in.k, in.v, in.terms(), opt);
    opt.stats = &ref;
    test::reference_attention(in.q, in.k, in.v, in.terms(), opt);
    ASSERT_EQ(fused.modulation_by_head.size(), 3u);
    ASSERT_EQ(ref.modulation_by_head.size(), 3u);
    ops::GateMoments pooled;
    for (std::size_t h = 0; h < 3; ++h) {
      const ops::GateMoments &a = fused.modulation_by_head[h], &b = ref.modulation_by_head[h];
      EXPECT_EQ(a.count, b.count) << "head " << h;
      EXPECT_NEAR(a.sum, b.sum, 1e-9 * (1 + std::abs(b.sum))) << "head " << h;
      EXPECT_EQ(a.below_0_1, b.below_0_1) << "head " << h;
      pooled.merge(a);
    }
    EXPECT_EQ(pooled.count, fused.modulation.count);
    EXPECT_NEAR(pooled.sum, fused.modulation.sum, 1e-9 * fused.modulation.sum);
    // Heads differ (their own row and column terms), so the view is not the pool repeated.
    EXPECT_NE(fused.modulation_by_head[0].mean(), fused.modulation_by_head[1].mean());
  }
}

TEST(AttentionStats, AccumulateAcrossCalls) {
  Inputs in = make_inputs({1, 2, 10, 16}, kMod, 6100);
  ops::AttentionStats once, twice;
  ops::AttentionOptions opt;
  opt.stats = &once;
  ops::flash_attention(in.q, in.k, in.v, in.terms(), opt);
  opt.stats = &twice;
  ops::flash_attention(in.q, in.k, in.v, in.terms(), opt);
  ops::flash_attention(in.q, in.k, in.v, in.terms(), opt);
  EXPECT_EQ(twice.entropy_count, 2 * once.entropy_count);
  EXPECT_EQ(twice.modulation.count, 2 * once.modulation.count);
  EXPECT_NEAR(twice.sink_sum, 2 * once.sink_sum, 1e-12);
}

TEST(AttentionStats, PlainCausalKnownValues) {
  // Equal scores (q = 0): row i is uniform over i + 1 keys, entropy ln(i + 1), A_i0 = 1/(i + 1).
  const std::int64_t T = 5;
  Tensor q = Tensor::zeros({1, 1, T, 4}, DType::f64), kv = test::randn({1, 1, T, 4}, 6200);
  ops::AttentionStats st;
  ops::AttentionOptions opt;
  opt.stats = &st;
  ops::flash_attention(q, kv, kv, {}, opt);
  double ent = 0, sink = 0;
  for (std::int64_t i = 0; i < T; ++i) {
    ent += std::log(static_cast<double>(i + 1));
    if (i >= 1) sink += 1.0 / static_cast<double>(i + 1);
  }
  EXPECT_NEAR(st.entropy_sum, ent, 1e-12);
  EXPECT_NEAR(st.sink_sum, sink, 1e-12);
  EXPECT_EQ(st.modulation.count, 0);
}

// ---- gradcheck of the fused op itself (central differences), through all three outputs ----

// Flattens out, row_entropy and modulation_entropy into one vector for gradcheck's random projection.
Tensor all_outputs(const ops::AttentionResult& r) {
  std::vector<Tensor> parts{ops::reshape(r.out, {-1})};
  if (r.row_entropy.defined()) parts.push_back(ops::reshape(r.row_entropy, {-1}));
  if (r.modulation_entropy.defined()) parts.push_back(ops::reshape(r.modulation_entropy, {-1}));
  if (r.modulation_sum.defined()) parts.push_back(ops::reshape(r.modulation_sum, {-1}));
  return ops::concat(parts, 0);
}

// `active`: an i32 [B, T] active_queries mask, or undefined.
void gradcheck_kind(const Dims& s, unsigned terms, std::int64_t window, double tau = 1.0, std::uint64_t noise_seed = 0,
                    const Tensor& active = {}, bool causal = true, const std::vector<double>& alpha_by_head = {}) {
  SCOPED_TRACE(dims_str(s) + " terms=" + std::to_string(terms) + " window=" + std::to_string(window) +
               (active.defined() ? " with skipped rows" : "") + (causal ? "" : " not causal") +
               (alpha_by_head.empty() ? "" : " α per head"));
  Inputs in = make_inputs(s, terms, 7000 + terms, tau, 0.7, alpha_by_head);
  std::vector<Tensor> xs;
  for (const Tensor& t : in.leaves())
    if (t.defined()) xs.push_back(t.detach());
  auto f = [&](const std::vector<Tensor>& x) {
    Inputs cur;
    std::size_t n = 0;
    cur.q = x[n++];
    cur.k = x[n++];
    cur.v = x[n++];
    if (in.row_bias.defined()) cur.row_bias = x[n++];
    if (in.col_bias.defined()) cur.col_bias = x[n++];
    if (in.modulated()) {
      cur.mod_row = x[n++];
      cur.mod_col = x[n++];
      cur.mod_alpha = x[n++];
    }
    cur.tau = tau;
    // A fresh generator per call: every evaluation sees the same noise.
    Generator noise(noise_seed);
    ops::AttentionOptions opt = options_for(cur, window, causal);
    opt.active_queries = active;
    return all_outputs(ops::flash_attention(cur.q, cur.k, cur.v, cur.terms(noise_seed ? &noise : nullptr), opt));
  };
  GradcheckOptions go;
  go.atol = 1e-6;
  go.rtol = 1e-5;
  EXPECT_TRUE(test::grads_ok(f, xs, go));
}

TEST(AttentionGradcheck, None) {
  gradcheck_kind({1, 2, 5, 3}, kNone, 0);
  gradcheck_kind({1, 1, 1, 2}, kNone, 0);
}
TEST(AttentionGradcheck, ColBias) { gradcheck_kind({1, 2, 5, 3}, kCol, 0); }
TEST(AttentionGradcheck, RowAndColBias) {
  gradcheck_kind({1, 2, 5, 3}, kRel, 0);
  gradcheck_kind({1, 2, 5, 3}, kRow | kCol, 0);
}
TEST(AttentionGradcheck, Modulation) { gradcheck_kind({2, 1, 5, 3}, kMod, 0); }
TEST(AttentionGradcheck, ModulationTemperature) { gradcheck_kind({1, 2, 5, 3}, kMod, 0, 0.6); }
TEST(AttentionGradcheck, ModulationNoise) { gradcheck_kind({1, 2, 5, 3}, kMod, 0, 1.5, 42); }
TEST(AttentionGradcheck, ModulationAlphaPerHead) {
  // One head without the modulation (α = 0): the others' α and the terms still check out, and α's
  // gradient comes per head (the zero head's too: dL/dα_h is Σ dM (G − 1) whatever α_h is).
  gradcheck_kind({2, 3, 5, 3}, kMod, 0, 1.0, 0, {}, true, {0.6, 0.0, 0.3});
  gradcheck_kind({1, 2, 6, 3}, kAll, 2, 0.8, 42, {}, true, {0.0, 0.9});
}
TEST(AttentionGradcheck, Window) {
  gradcheck_kind({1, 2, 6, 3}, kNone, 1);
  gradcheck_kind({1, 2, 6, 3}, kAll, 2);
}
TEST(AttentionGradcheck, AllTermsAcrossTiles) { gradcheck_kind({1, 1, 66, 1}, kAll, 0, 0.9); }
TEST(AttentionGradcheck, AllTermsWindowAcrossTiles) { gradcheck_kind({1, 1, 67, 1}, kAll, 10); }

// ---- neutral settings reduce to plain attention ----

// out and row_entropy of `gated` equal those of plain attention on the same q, k, v, and the q, k, v
// gradients agree.
void expect_same_as_plain(const Inputs& gated, std::int64_t window, const std::string& what, double tol = 1e-12) {
  SCOPED_TRACE(what);
  Inputs plain;
  plain.q = gated.q;
  plain.k = gated.k;
  plain.v = gated.v;
  ops::AttentionOptions opt;
  opt.window = window;
  opt.entropy_output = true;
  RunResult a = run(ops::flash_attention, gated, opt, {true, true, false});
  RunResult b = run(ops::flash_attention, plain, opt, {true, true, false});
  EXPECT_TRUE(test::all_close(a.result.out, b.result.out, tol, tol));
  EXPECT_TRUE(test::all_close(a.result.row_entropy, b.result.row_entropy, tol, tol));
  for (std::size_t i = 0; i < 3; ++i)
    EXPECT_TRUE(test::all_close(a.grads[i], b.grads[i], tol, tol)) << "d" << kLeafNames[i];
}

TEST(AttentionIdentity, ModulationWithAlphaZeroIsNone) {
  for (std::int64_t w : {0, 5}) {
    Inputs in = make_inputs({1, 2, 70, 32}, kMod, 8000, 0.7, /*alpha=*/0.0);
    expect_same_as_plain(in, w, "alpha=0 window=" + std::to_string(w));
  }
}

TEST(AttentionIdentity, EqualColBiasIsNone) {
  // A bias shared by all keys of a head shifts every logit of a row equally: softmax ignores it.
  Inputs in = make_inputs({2, 2, 70, 16}, kNone, 8100);
  in.col_bias = Tensor::full({2, 2, 70}, -1.7, DType::f64).set_requires_grad(true);
  expect_same_as_plain(in, 0, "col_bias = -1.7");
  expect_same_as_plain(in, 16, "col_bias = -1.7, window 16");
}

TEST(AttentionIdentity, PrefixDifferenceOfZerosIsNone) {
  Inputs in = make_inputs({1, 2, 70, 16}, kNone, 8200);
  const Tensor c = ops::cumsum(Tensor::zeros({1, 2, 70}, DType::f64), 2).detach();
  in.row_bias = c.clone().set_requires_grad(true);
  in.col_bias = ops::neg(c).detach().set_requires_grad(true);
  expect_same_as_plain(in, 0, "c = 0");
  // Equally neutral: any c constant along the sequence (c_i − c_j = 0).
  in.row_bias = Tensor::full({1, 2, 70}, 3.5, DType::f64).set_requires_grad(true);
  in.col_bias = Tensor::full({1, 2, 70}, -3.5, DType::f64).set_requires_grad(true);
  expect_same_as_plain(in, 5, "c = 3.5, window 5");
}

TEST(AttentionIdentity, RowBiasAloneIsNone) {
  // r_i shifts a whole row: P, the output and the entropy do not depend on it (to rounding).
  Inputs in = make_inputs({1, 2, 70, 16}, kRow, 8250);
  expect_same_as_plain(in, 0, "random row_bias", 1e-11);
  expect_same_as_plain(in, 9, "random row_bias, window 9", 1e-11);
}

// The fused op in f32 agrees with itself in f64 on the same inputs: outputs and every gradient.
void expect_f32_matches_f64(const Inputs& in64, const ops::AttentionOptions& o) {
  Inputs in32 = to_dtype(in64, DType::f32);
  for (Tensor t : in32.leaves())
    if (t.defined()) t.set_requires_grad(true);
  RunResult a = run(ops::flash_attention, in32, o);
  RunResult b = run(ops::flash_attention, in64, o);
  EXPECT_EQ(a.result.out.dtype(), DType::f32);
  EXPECT_TRUE(test::all_close(a.result.out, b.result.out, 1e-5, 1e-4));
  if (o.entropy_output) {
    EXPECT_TRUE(test::all_close(a.result.row_entropy, b.result.row_entropy, 1e-5, 1e-4));
  }
  if (o.modulation_entropy) {
    EXPECT_TRUE(test::all_close(a.result.modulation_entropy, b.result.modulation_entropy, 1e-3, 1e-5));
  }
  for (std::size_t i = 0; i < a.grads.size(); ++i) {
    if (!b.grads[i].defined()) continue;
    ASSERT_TRUE(a.grads[i].defined()) << "d" << kLeafNames[i];
    // Gradients that sum over many rows (α, key/col terms) get a looser absolute tolerance.
    EXPECT_TRUE(test::all_close(a.grads[i], b.grads[i], i == 7 ? 1e-3 : 2e-5, 1e-4)) << "d" << kLeafNames[i];
  }
}

TEST(AttentionIdentity, Float32MatchesFloat64) {
  for (unsigned terms : {kNone, kAll})
    for (std::int64_t w : {0, 16}) {
      SCOPED_TRACE("terms=" + std::to_string(terms) + " window=" + std::to_string(w));
      Inputs in64 = make_inputs({1, 2, 100, 64}, terms, 8300 + terms);
      expect_f32_matches_f64(in64, options_for(in64, w));
    }
}

TEST(AttentionIdentity, Float32ModulationFastPathMatchesFloat64) {
  // Without entropies, statistics or noise (a training step's pair gate), f32 takes the vectorised
  // modulation loops (σ through fast_exp); f64 takes the general ones. Windows, temperature and a
  // column bias beside the modulation; rows across several tiles.
  for (unsigned terms : {kMod, kCol | kMod})
    for (std::int64_t w : {0, 16}) {
      SCOPED_TRACE("terms=" + std::to_string(terms) + " window=" + std::to_string(w));
      ops::AttentionOptions o;
      o.window = w;
      expect_f32_matches_f64(make_inputs({2, 2, 130, 32}, terms, 8400 + terms, 0.8, 0.6), o);
    }
}

TEST(AttentionEntropy, ZeroWeightEntriesContributeNothing) {
  // α = 1 and G underflowing to 0 make M = 0 on every entry: A = 0, and 0·ln 0 counts as 0, so the
  // entropy and its gradient stay finite instead of NaN.
  Tensor q = test::randn({1, 1, 4, 8}, 31), k = test::randn({1, 1, 4, 8}, 32), v = test::randn({1, 1, 4, 8}, 33);
  ops::AttentionTerms g;
  g.modulation_row = Tensor::full({1, 1, 4}, -400, DType::f64).set_requires_grad(true);
  g.modulation_col = Tensor::full({1, 1, 4}, -400, DType::f64);
  g.modulation_alpha = Tensor::full({1}, 1.0, DType::f64);
  q.set_requires_grad(true);
  ops::AttentionStats stats;
  ops::AttentionOptions opt;
  opt.entropy_output = true;
  opt.stats = &stats;
  ops::AttentionResult r = ops::flash_attention(q, k, v, g, opt);
  for (double h : r.row_entropy.to_vector()) EXPECT_EQ(h, 0.0);
  EXPECT_EQ(stats.entropy_sum, 0.0);
  ops::sum(r.row_entropy).backward();
  for (double x : q.grad().to_vector()) EXPECT_TRUE(std::isfinite(x));
}

TEST(AttentionEntropy, Float32StaysAccurateWithLargeLogits) {
  // The entropy is accumulated relative to the running max, so large logits do not cancel away
  // f32's precision (|S| ≈ 500 here).
  Inputs in64 = make_inputs({1, 2, 100, 16}, kCol, 77);
  in64.col_bias = Tensor::full({1, 2, 100}, -500, DType::f64);
  Inputs in32 = to_dtype(in64, DType::f32);
  ops::AttentionOptions opt;
  opt.entropy_output = true;
  NoGradGuard no_grad;
  Tensor h32 = ops::flash_attention(in32.q, in32.k, in32.v, in32.terms(), opt).row_entropy;
  Tensor h64 = ops::flash_attention(in64.q, in64.k, in64.v, in64.terms(), opt).row_entropy;
  EXPECT_TRUE(test::all_close(h32, h64, 2e-5, 1e-5));
}

// ---- the modulation's logistic noise ----

TEST(AttentionNoise, SameStateSameOutput) {
  Inputs in = make_inputs({1, 2, 40, 16}, kMod, 9000);
  Generator g1(5, 1), g2(5, 1);
  ops::AttentionResult a = ops::flash_attention(in.q, in.k, in.v, in.terms(&g1), options_for(in, 0));
  ops::AttentionResult b = ops::flash_attention(in.q, in.k, in.v, in.terms(&g2), options_for(in, 0));
  EXPECT_TRUE(test::all_close(a.out, b.out, 0, 0));
  EXPECT_TRUE(test::all_close(a.modulation_entropy, b.modulation_entropy, 0, 0));
}

TEST(AttentionNoise, DiffersFromNoNoiseAndAdvancesTheGenerator) {
  Inputs in = make_inputs({1, 2, 40, 16}, kMod, 9100);
  Generator g(5, 1);
  const std::uint64_t before = g.state().offset;
  ops::AttentionResult noisy = ops::flash_attention(in.q, in.k, in.v, in.terms(&g), options_for(in, 0));
  EXPECT_GE(g.state().offset, before + 2 * 40 * 40);  // one word per (head, i, j)
  ops::AttentionResult again = ops::flash_attention(in.q, in.k, in.v, in.terms(&g), options_for(in, 0));
  ops::AttentionResult clean = ops::flash_attention(in.q, in.k, in.v, in.terms(), options_for(in, 0));
  EXPECT_FALSE(test::all_close(noisy.out, clean.out, 1e-6, 0));
  EXPECT_FALSE(test::all_close(noisy.out, again.out, 1e-6, 0));
  // Without modulation terms the noise source is unused.
  Inputs plain = make_inputs({1, 1, 8, 16}, kNone, 9200);
  Generator unused(5, 1);
  ops::flash_attention(plain.q, plain.k, plain.v, plain.terms(&unused), {});
  EXPECT_EQ(unused.state().offset, 0u);
}

// ---- determinism and no-grad ----

TEST(AttentionDeterminism, RepeatedRunsAreBitwiseEqual) {
  Inputs in = make_inputs({2, 2, 150, 32}, kAll, 9300);
  RunResult a = run(ops::flash_attention, in, options_for(in, 0));
  RunResult b = run(ops::flash_attention, in, options_for(in, 0));
  EXPECT_TRUE(test::all_close(a.result.out, b.result.out, 0, 0));
  for (std::size_t i = 0; i < a.grads.size(); ++i)
    EXPECT_TRUE(test::all_close(a.grads[i], b.grads[i], 0, 0)) << kLeafNames[i];
}

TEST(AttentionNoGrad, RecordsNothing) {
  Inputs in = make_inputs({1, 1, 4, 8}, kAll, 9400);
  NoGradGuard guard;
  ops::AttentionResult r = ops::flash_attention(in.q, in.k, in.v, in.terms(), options_for(in, 0));
  EXPECT_TRUE(r.out.is_leaf());
  EXPECT_TRUE(r.row_entropy.is_leaf());
  EXPECT_TRUE(r.modulation_entropy.is_leaf());
}

// ---- skipped query rows (active_queries) ----

// An i32 [B, T] active_queries mask: each row active with probability `frac` (fixed seed); frac 0
// and 1 give no row and every row.
Tensor random_active(std::int64_t B, std::int64_t T, double frac, std::uint64_t seed) {
  const std::vector<double> u = test::rand({B, T}, seed, 0.0, 1.0).to_vector();
  std::vector<std::int32_t> a(u.size());
  for (std::size_t i = 0; i < u.size(); ++i) a[i] = u[i] < frac;
  return Tensor::from_ints(a, {B, T});
}

// A mask with whole 64-row tiles empty, one row alone in a tile, and the rest random: rows 0–63
// skipped, row 64 the only active one of its tile, rows from 128 on active with probability 1/2.
Tensor tiled_active(std::int64_t B, std::int64_t T, std::uint64_t seed) {
  std::vector<std::int32_t> a = [&] {
    const std::vector<double> u = test::rand({B, T}, seed, 0.0, 1.0).to_vector();
    std::vector<std::int32_t> v(u.size());
    for (std::size_t i = 0; i < u.size(); ++i) v[i] = u[i] < 0.5;
    return v;
  }();
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t i = 0; i < std::min<std::int64_t>(T, 128); ++i) a[static_cast<std::size_t>(b * T + i)] = i == 64;
  return Tensor::from_ints(a, {B, T});
}

std::int64_t count_active(const Tensor& active, bool from_row_1 = false) {
  const std::vector<double> a = active.to_vector();
  const std::int64_t T = active.size(1);
  std::int64_t n = 0;
  for (std::size_t x = 0; x < a.size(); ++x) n += a[x] != 0.0 && (!from_row_1 || static_cast<std::int64_t>(x) % T >= 1);
  return n;
}

TEST(AttentionActiveQueries, MatchesReference) {
  // Values and every gradient (q, k, v, row/col bias, modulation terms) through out, row_entropy and
  // modulation_entropy; T not a multiple of the tile; windows inside and across tiles.
  std::uint64_t seed = 11000;
  for (const Dims& s : {Dims{1, 2, 70, 16}, Dims{2, 2, 130, 32}, Dims{1, 1, 3, 8}})
    for (unsigned terms : {kNone, kCol | kRel, kAll})
      for (std::int64_t w : {0, 5, 70}) {
        Inputs in = make_inputs(s, terms, seed += 10, 0.8);
        const std::vector<std::pair<std::string, Tensor>> masks = {
            {"none active", random_active(s.B, s.T, 0.0, seed)},
            {"all active", random_active(s.B, s.T, 1.0, seed)},
            {"half active", random_active(s.B, s.T, 0.5, seed + 1)},
            {"few active", random_active(s.B, s.T, 0.1, seed + 2)},
            {"tiles", tiled_active(s.B, s.T, seed + 3)}};
        for (const auto& [name, mask] : masks) {
          ops::AttentionOptions opt = options_for(in, w);
          opt.active_queries = mask;
          expect_matches_reference(
              in, opt, dims_str(s) + " terms=" + std::to_string(terms) + " window=" + std::to_string(w) + " " + name);
        }
      }
}

TEST(AttentionActiveQueries, NoiseStaysTiedToTheTruePositions) {
  // Compacting a tile's rows must not move a row's noise: the reference draws word (b·h, i, j).
  Inputs in = make_inputs({2, 2, 100, 16}, kAll, 11500, 0.9);
  for (std::int64_t w : {0, 9}) {
    ops::AttentionOptions opt = options_for(in, w);
    opt.active_queries = random_active(2, 100, 0.4, 11501);
    Generator g_fused(78, 2), g_ref(78, 2);
    RunResult fused = run(ops::flash_attention, in, opt, {}, 99, &g_fused);
    RunResult ref = run(test::reference_attention, in, opt, {}, 99, &g_ref);
    EXPECT_EQ(g_fused.state().offset, g_ref.state().offset);
    EXPECT_TRUE(test::all_close(fused.result.out, ref.result.out, 1e-9, 1e-9));
    EXPECT_TRUE(test::all_close(fused.result.modulation_entropy, ref.result.modulation_entropy, 1e-9, 1e-9));
    for (std::size_t i = 0; i < fused.grads.size(); ++i)
      EXPECT_TRUE(test::all_close(fused.grads[i], ref.grads[i], 1e-9, 1e-9)) << "d" << kLeafNames[i] << " window " << w;
  }
}

TEST(AttentionActiveQueries, AllOnesIsBitwiseTheSameAsNoMask) {
  // Every tile fully active takes the unmasked path: same bits, statistics included.
  Inputs in = make_inputs({2, 2, 150, 32}, kAll, 11600);
  for (std::int64_t w : {0, 20}) {
    ops::AttentionOptions plain = options_for(in, w), masked = options_for(in, w);
    ops::AttentionStats st_plain, st_masked;
    plain.stats = &st_plain;
    masked.stats = &st_masked;
    masked.active_queries = random_active(2, 150, 1.0, 1);
    RunResult a = run(ops::flash_attention, in, plain);
    RunResult b = run(ops::flash_attention, in, masked);
    EXPECT_TRUE(test::all_close(a.result.out, b.result.out, 0, 0));
    EXPECT_TRUE(test::all_close(a.result.row_entropy, b.result.row_entropy, 0, 0));
    EXPECT_TRUE(test::all_close(a.result.modulation_entropy, b.result.modulation_entropy, 0, 0));
    for (std::size_t i = 0; i < a.grads.size(); ++i)
      EXPECT_TRUE(test::all_close(a.grads[i], b.grads[i], 0, 0)) << "d" << kLeafNames[i];
    EXPECT_EQ(st_plain.entropy_sum, st_masked.entropy_sum);
    EXPECT_EQ(st_plain.entropy_count, st_masked.entropy_count);
    EXPECT_EQ(st_plain.sink_sum, st_masked.sink_sum);
    EXPECT_EQ(st_plain.modulation.sum, st_masked.modulation.sum);
    EXPECT_EQ(st_plain.modulation.count, st_masked.modulation.count);
  }
}

TEST(AttentionActiveQueries, SkippedRowsAreZeroAndTheirGradientInputsDoNotMatter) {
  // A skipped row's output and entropy are exactly 0, and its d_out and d_row_entropy are never
  // read: NaN there changes no gradient bit, and its dq row is 0.
  const Dims s{2, 2, 140, 16};
  Inputs in = make_inputs(s, kAll, 11700);
  const Tensor active = tiled_active(s.B, s.T, 11701);
  const std::vector<double> act = active.to_vector();
  auto skipped = [&](std::int64_t bh, std::int64_t i) {
    return act[static_cast<std::size_t>((bh / s.H) * s.T + i)] == 0.0;
  };
  ops::AttentionOptions opt = options_for(in, 0);
  opt.active_queries = active;
  auto grads_with = [&](bool poison) {
    const ops::AttentionResult r = ops::flash_attention(in.q, in.k, in.v, in.terms(), opt);
    std::vector<double> g_out = test::randn({s.B, s.H, s.T, s.d}, 1).to_vector();
    std::vector<double> g_ent = test::randn({s.B, s.H, s.T}, 2).to_vector();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (std::int64_t bh = 0; bh < s.B * s.H; ++bh)
      for (std::int64_t i = 0; i < s.T; ++i) {
        if (!poison || !skipped(bh, i)) continue;
        g_ent[static_cast<std::size_t>(bh * s.T + i)] = nan;
        std::fill_n(g_out.begin() + (bh * s.T + i) * s.d, s.d, nan);
      }
    // The loss value is NaN when poisoned; only the gradients it sends into the op matter.
    const Tensor loss = ops::sum(r.out * Tensor::from(g_out, {s.B, s.H, s.T, s.d}, DType::f64)) +
                        ops::sum(r.row_entropy * Tensor::from(g_ent, {s.B, s.H, s.T}, DType::f64));
    loss.backward();
    std::vector<Tensor> grads;
    for (Tensor t : in.leaves()) {
      grads.push_back(t.grad());
      t.zero_grad();
    }
    return std::make_pair(r, grads);
  };
  const auto [clean, clean_grads] = grads_with(false);
  const auto [poisoned, poisoned_grads] = grads_with(true);
  for (std::size_t i = 0; i < clean_grads.size(); ++i)
    EXPECT_TRUE(test::all_close(clean_grads[i], poisoned_grads[i], 0, 0)) << "d" << kLeafNames[i];
  const std::vector<double> out = clean.out.to_vector(), ent = clean.row_entropy.to_vector(),
                            dq = clean_grads[0].to_vector();
  std::int64_t checked = 0;
  for (std::int64_t bh = 0; bh < s.B * s.H; ++bh)
    for (std::int64_t i = 0; i < s.T; ++i) {
      if (!skipped(bh, i)) continue;
      ++checked;
      EXPECT_EQ(ent[static_cast<std::size_t>(bh * s.T + i)], 0.0);
      for (std::int64_t x = 0; x < s.d; ++x) {
        EXPECT_EQ(out[static_cast<std::size_t>((bh * s.T + i) * s.d + x)], 0.0);
        EXPECT_EQ(dq[static_cast<std::size_t>((bh * s.T + i) * s.d + x)], 0.0);
      }
    }
  EXPECT_GT(checked, 64);
}

// A copy of `t` ([B, H, T, …] or [B, H, T]) whose entries on skipped rows are `fill(row)` (`act`:
// the [B, T] mask as values), a leaf of its own in `dtype`.
Tensor with_skipped_rows(const Tensor& t, const std::vector<double>& act, std::int64_t H, std::int64_t T, DType dtype,
                         double (*fill)(std::int64_t)) {
  std::vector<double> v = t.to_vector();
  const std::int64_t rows = t.size(0) * H * T, width = static_cast<std::int64_t>(v.size()) / rows;
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t bh = r / T, i = r % T;
    if (act[static_cast<std::size_t>((bh / H) * T + i)] == 0.0) std::fill_n(v.begin() + r * width, width, fill(i));
  }
  Tensor out = Tensor::from(v, t.shape(), dtype);
  out.set_requires_grad(true);
  return out;
}

double zero_fill(std::int64_t) { return 0.0; }
// NaN, +Inf and −Inf in turn: 0·x is NaN for each of them.
double non_finite_fill(std::int64_t i) {
  const double v[] = {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                      -std::numeric_limits<double>::infinity()};
  return v[i % 3];
}

TEST(AttentionActiveQueries, NonFiniteSkippedRowsReachNoGradient) {
  // Padding rows may hold anything: NaN and ±Inf in a skipped row's q, row terms (row_bias,
  // modulation_row) and d_out must leave the outputs and every gradient finite and bitwise the same
  // as zeros there (a product that reads such a row and relies on a 0 factor gives 0·NaN = NaN), in
  // the fused op and in the composed one (the CUDA fallback).
  using Op = ops::AttentionResult (*)(const Tensor&, const Tensor&, const Tensor&, const ops::AttentionTerms&,
                                      const ops::AttentionOptions&);
  const Dims s{2, 2, 140, 16};
  const Inputs base = make_inputs(s, kAll, 11750);
  const Tensor active = tiled_active(s.B, s.T, 11751);
  const std::vector<double> act = active.to_vector();
  for (const auto& [op_name, op] : {std::pair<const char*, Op>{"fused", ops::flash_attention},
                                    std::pair<const char*, Op>{"composed", test::reference_attention}})
    for (DType dtype : {DType::f64, DType::f32})
      for (std::int64_t w : {0, 20}) {
        SCOPED_TRACE(std::string(op_name) + (dtype == DType::f64 ? " f64" : " f32") + " window " + std::to_string(w));
        auto grads_with = [&](double (*fill)(std::int64_t)) {
          Inputs in;
          for (auto [dst, src] : {std::pair{&in.k, &base.k},
                                  {&in.v, &base.v},
                                  {&in.col_bias, &base.col_bias},
                                  {&in.mod_col, &base.mod_col},
                                  {&in.mod_alpha, &base.mod_alpha}}) {
            *dst = src->detach().to(dtype);
            dst->set_requires_grad(true);
          }
          in.tau = base.tau;
          in.q = with_skipped_rows(base.q, act, s.H, s.T, dtype, fill);
          in.row_bias = with_skipped_rows(base.row_bias, act, s.H, s.T, dtype, fill);
          in.mod_row = with_skipped_rows(base.mod_row, act, s.H, s.T, dtype, fill);
          ops::AttentionOptions opt = options_for(in, w);
          opt.active_queries = active;
          const ops::AttentionResult r = op(in.q, in.k, in.v, in.terms(), opt);
          const Tensor g_out = with_skipped_rows(test::randn({s.B, s.H, s.T, s.d}, 3), act, s.H, s.T, dtype, fill);
          const Tensor g_ent = with_skipped_rows(test::randn({s.B, s.H, s.T}, 4), act, s.H, s.T, dtype, fill);
          // The loss value is NaN when poisoned; only the gradients it sends into the op matter.
          (ops::sum(r.out * g_out.detach()) + ops::sum(r.row_entropy * g_ent.detach()) + ops::sum(r.modulation_entropy))
              .backward();
          std::vector<Tensor> grads{r.out.detach(), r.row_entropy.detach(), r.modulation_entropy.detach()};
          for (const Tensor& t : in.leaves()) grads.push_back(t.grad());
          return grads;
        };
        // The outputs first, then the leaves' gradients.
        const char* const names[] = {"out",        "row_entropy", "modulation_entropy", "dq",        "dk",         "dv",
                                     "d_row_bias", "d_col_bias",  "d_mod_row",          "d_mod_col", "d_mod_alpha"};
        const std::vector<Tensor> clean = grads_with(zero_fill), poisoned = grads_with(non_finite_fill);
        for (std::size_t i = 0; i < clean.size(); ++i) {
          ASSERT_TRUE(poisoned[i].defined()) << names[i];
          for (double x : poisoned[i].to_vector()) ASSERT_TRUE(std::isfinite(x)) << names[i];
          EXPECT_TRUE(test::all_close(poisoned[i], clean[i], 0, 0)) << names[i];
        }
      }
}

TEST(AttentionActiveQueries, ComplementaryMasksPartitionTheRows) {
  // Two experts that share q, k, v and split the rows between them add up to the unmasked op.
  const Dims s{2, 2, 130, 32};
  Inputs in = make_inputs(s, kCol | kRel, 11800);
  const Tensor a = random_active(s.B, s.T, 0.5, 11801);
  std::vector<std::int32_t> rest;
  for (double x : a.to_vector()) rest.push_back(x == 0.0);
  for (std::int64_t w : {0, 33}) {
    ops::AttentionOptions opt = options_for(in, w), first = opt, second = opt;
    first.active_queries = a;
    second.active_queries = Tensor::from_ints(rest, {s.B, s.T});
    RunResult whole = run(ops::flash_attention, in, opt);
    RunResult one = run(ops::flash_attention, in, first), other = run(ops::flash_attention, in, second);
    EXPECT_TRUE(test::all_close(one.result.out + other.result.out, whole.result.out, 1e-12, 1e-12));
    EXPECT_TRUE(
        test::all_close(one.result.row_entropy + other.result.row_entropy, whole.result.row_entropy, 1e-12, 1e-12));
    for (std::size_t i = 0; i < 5; ++i)
      EXPECT_TRUE(test::all_close(one.grads[i] + other.grads[i], whole.grads[i], 1e-11, 1e-11)) << "d" << kLeafNames[i];
  }
}

TEST(AttentionActiveQueries, StatsCountOnlyActiveRows) {
  for (unsigned terms : {kNone, kMod, kAll})
    for (std::int64_t w : {0, 5})
      for (const Dims& s : {Dims{2, 2, 9, 16}, Dims{1, 2, 130, 16}}) {
        SCOPED_TRACE("terms=" + std::to_string(terms) + " window=" + std::to_string(w) + " " + dims_str(s));
        Inputs in = make_inputs(s, terms, 11900 + terms + static_cast<std::uint64_t>(w));
        for (const Tensor& active :
             {random_active(s.B, s.T, 0.3, 11950), tiled_active(s.B, s.T, 11960), random_active(s.B, s.T, 0.0, 1)}) {
          ops::AttentionStats fused, ref;
          ops::AttentionOptions opt;
          opt.window = w;
          opt.active_queries = active;
          opt.stats = &fused;
          ops::flash_attention(in.q, in.k, in.v, in.terms(), opt);
          opt.stats = &ref;
          test::reference_attention(in.q, in.k, in.v, in.terms(), opt);
          expect_same_stats(fused, ref);
          EXPECT_EQ(fused.entropy_count, s.H * count_active(active));
          EXPECT_EQ(fused.sink_count, s.H * count_active(active, true));
          if (in.modulated()) {
            // One modulation value per visible key of each active row.
            const std::vector<double> act = active.to_vector();
            std::int64_t visible = 0;
            for (std::int64_t b = 0; b < s.B; ++b)
              for (std::int64_t i = 0; i < s.T; ++i)
                if (act[static_cast<std::size_t>(b * s.T + i)] != 0.0)
                  visible += s.H * (w == 0 ? i + 1 : std::min(i + 1, w));
            EXPECT_EQ(fused.modulation.count, visible);
          }
        }
      }
}

TEST(AttentionActiveQueries, Gradcheck) {
  gradcheck_kind({1, 2, 6, 3}, kAll, 0, 0.8, 0, Tensor::from_ints({1, 0, 1, 1, 0, 1}, {1, 6}));
  gradcheck_kind({2, 1, 5, 3}, kMod, 2, 1.2, 42, Tensor::from_ints({0, 1, 1, 0, 1, 1, 1, 0, 0, 1}, {2, 5}));
  gradcheck_kind({1, 1, 67, 1}, kAll, 10, 0.9, 0, random_active(1, 67, 0.5, 12000));
}

TEST(AttentionActiveQueries, CostFollowsTheActiveRows) {
  // Not a timing test: a mask with no active row does no work at all, so even a huge T returns at
  // once with zeros (a full pass over T = 16384 would take seconds here).
  Tensor q = Tensor::zeros({1, 1, 16384, 8}, DType::f32);
  ops::AttentionOptions opt;
  opt.active_queries = random_active(1, 16384, 0.0, 1);
  NoGradGuard no_grad;
  const Tensor out = ops::flash_attention(q, q, q, {}, opt).out;
  for (double x : out.to_vector()) ASSERT_EQ(x, 0.0);
}

// ---- not causal: an encoder's bidirectional self-attention and cross-attention (Tq ≠ Tk) ----

// Query and key lengths equal and not, one of each, below, at and across the 64 tile on either side.
const std::vector<Dims> kBidirectionalShapes = {{1, 1, 1, 16, 1},   {2, 3, 3, 16, 3},   {1, 2, 5, 16, 9},
                                                {1, 2, 17, 32, 3},  {2, 1, 1, 16, 7},   {1, 2, 4, 16, 1},
                                                {1, 2, 64, 32, 64}, {1, 2, 63, 64, 65}, {1, 2, 65, 128, 64},
                                                {1, 2, 130, 32, 7}, {1, 1, 3, 16, 130}, {1, 2, 70, 16, 70}};

void check_bidirectional(unsigned terms, double tau = 1.0, std::uint64_t seed = 20000,
                         double hard_threshold = std::numeric_limits<double>::quiet_NaN()) {
  for (const Dims& s : kBidirectionalShapes) {
    Inputs in = make_inputs(s, terms, seed += 10, tau);
    in.hard_threshold = hard_threshold;
    expect_matches_reference(in, options_for(in, 0, /*causal=*/false), dims_str(s) + " not causal");
  }
}

TEST(AttentionBidirectional, NoTerms) { check_bidirectional(kNone); }
TEST(AttentionBidirectional, ColBias) { check_bidirectional(kCol); }
TEST(AttentionBidirectional, RowAndColBias) {
  check_bidirectional(kRel);
  check_bidirectional(kRow | kCol, 1.0, 20500);
}
TEST(AttentionBidirectional, Modulation) { check_bidirectional(kMod, 0.7); }
TEST(AttentionBidirectional, HardModulation) { check_bidirectional(kAll, 0.8, 21000, 0.45); }
TEST(AttentionBidirectional, AllTerms) { check_bidirectional(kAll, 0.9, 21500); }

TEST(AttentionBidirectional, NoiseMatchesReference) {
  for (const Dims& s : {Dims{2, 2, 70, 16, 9}, Dims{1, 2, 5, 16, 70}, Dims{1, 1, 66, 16, 66}}) {
    Inputs in = make_inputs(s, kAll, 22000, 0.9);
    expect_noise_matches_reference(in, options_for(in, 0, false), dims_str(s));
  }
}

TEST(AttentionBidirectional, ActiveQueriesMatchReference) {
  std::uint64_t seed = 23000;
  for (const Dims& s : {Dims{1, 2, 70, 16, 9}, Dims{2, 2, 130, 32, 66}, Dims{1, 1, 3, 8, 70}})
    for (unsigned terms : {kNone, kCol | kRel, kAll}) {
      Inputs in = make_inputs(s, terms, seed += 10, 0.8);
      for (const Tensor& mask : {random_active(s.B, s.T, 0.0, seed), random_active(s.B, s.T, 0.5, seed + 1),
                                 tiled_active(s.B, s.T, seed + 2)}) {
        ops::AttentionOptions opt = options_for(in, 0, false);
        opt.active_queries = mask;
        expect_matches_reference(in, opt, dims_str(s) + " terms=" + std::to_string(terms));
      }
    }
}

TEST(AttentionBidirectional, StatsMatchReference) {
  for (unsigned terms : {kNone, kCol | kRel, kMod, kAll})
    for (const Dims& s : {Dims{1, 1, 1, 16, 1}, Dims{2, 2, 9, 16, 9}, Dims{2, 2, 5, 16, 9}, Dims{1, 2, 130, 16, 3},
                          Dims{1, 2, 3, 16, 130}})
      for (bool skip_rows : {false, true}) {
        SCOPED_TRACE("terms=" + std::to_string(terms) + " " + dims_str(s) + (skip_rows ? " skipped rows" : ""));
        Inputs in = make_inputs(s, terms, 24000 + terms);
        ops::AttentionStats fused, ref;
        ops::AttentionOptions opt;  // stats alone: no entropy output asked
        opt.causal = false;
        if (skip_rows) opt.active_queries = random_active(s.B, s.T, 0.5, 24100);
        opt.stats = &fused;
        ops::flash_attention(in.q, in.k, in.v, in.terms(), opt);
        opt.stats = &ref;
        test::reference_attention(in.q, in.k, in.v, in.terms(), opt);
        expect_same_stats(fused, ref);
        const std::int64_t rows = skip_rows ? s.H * count_active(opt.active_queries) : s.B * s.H * s.T;
        EXPECT_EQ(fused.entropy_count, rows);
        EXPECT_EQ(fused.sink_count, rows);  // every active query, i = 0 included
        EXPECT_EQ(fused.modulation.count, in.modulated() ? rows * s.keys() : 0);
      }
}

TEST(AttentionBidirectional, EqualScoresKnownValues) {
  // q = 0: every row is uniform over all Tk keys (not the i + 1 a causal mask shows it): output the
  // mean of v, entropy ln Tk, A_i0 = 1/Tk for every query, query 0 included.
  for (const auto& [Tq, Tk] : std::vector<std::pair<std::int64_t, std::int64_t>>{{5, 5}, {3, 7}, {7, 3}, {2, 70}}) {
    SCOPED_TRACE("Tq=" + std::to_string(Tq) + " Tk=" + std::to_string(Tk));
    Tensor q = Tensor::zeros({1, 1, Tq, 4}, DType::f64), kv = test::randn({1, 1, Tk, 4}, 24200);
    ops::AttentionStats st;
    ops::AttentionOptions opt;
    opt.causal = false;
    opt.stats = &st;
    const Tensor out = ops::flash_attention(q, kv, kv, {}, opt).out;
    const std::vector<double> o = out.to_vector(), v = kv.to_vector();
    for (std::int64_t i = 0; i < Tq; ++i)
      for (std::int64_t x = 0; x < 4; ++x) {
        double mean = 0;
        for (std::int64_t j = 0; j < Tk; ++j) mean += v[static_cast<std::size_t>(j * 4 + x)] / static_cast<double>(Tk);
        EXPECT_NEAR(o[static_cast<std::size_t>(i * 4 + x)], mean, 1e-12);
      }
    EXPECT_NEAR(st.entropy_sum, static_cast<double>(Tq) * std::log(static_cast<double>(Tk)), 1e-12);
    EXPECT_NEAR(st.sink_sum, static_cast<double>(Tq) / static_cast<double>(Tk), 1e-12);
    EXPECT_EQ(st.sink_count, Tq);
  }
}

TEST(AttentionBidirectional, Float32MatchesFloat64) {
  // The general loops (entropies on) and the vectorised modulation ones (none asked), f32 against f64.
  for (const Dims& s : {Dims{2, 2, 130, 32, 70}, Dims{1, 2, 9, 64, 130}})
    for (unsigned terms : {kNone, kMod, kAll}) {
      SCOPED_TRACE("terms=" + std::to_string(terms) + " " + dims_str(s));
      Inputs in64 = make_inputs(s, terms, 24300 + terms, 0.8, 0.6);
      expect_f32_matches_f64(in64, options_for(in64, 0, false));
      ops::AttentionOptions plain;
      plain.causal = false;
      expect_f32_matches_f64(in64, plain);
    }
}

TEST(AttentionGradcheck, NotCausal) {
  gradcheck_kind({1, 2, 5, 3}, kNone, 0, 1.0, 0, {}, false);
  gradcheck_kind({1, 2, 5, 3}, kAll, 0, 0.8, 0, {}, false);
}
TEST(AttentionGradcheck, Cross) {
  gradcheck_kind({1, 2, 3, 3, 5}, kNone, 0, 1.0, 0, {}, false);
  gradcheck_kind({2, 1, 5, 3, 2}, kAll, 0, 0.8, 0, {}, false);
  gradcheck_kind({1, 2, 4, 3, 6}, kRow | kCol, 0, 1.0, 0, {}, false);
  gradcheck_kind({1, 2, 3, 3, 4}, kMod, 0, 1.5, 42, {}, false);  // with the modulation's noise
}
TEST(AttentionGradcheck, CrossAcrossTiles) {
  gradcheck_kind({1, 1, 3, 1, 66}, kAll, 0, 0.9, 0, {}, false);
  gradcheck_kind({1, 1, 66, 1, 3}, kAll, 0, 0.9, 0, {}, false);
}
TEST(AttentionGradcheck, CrossWithSkippedRows) {
  gradcheck_kind({1, 2, 6, 3, 4}, kAll, 0, 0.8, 0, Tensor::from_ints({1, 0, 1, 1, 0, 1}, {1, 6}), false);
}

// ---- bad input: typed errors naming the op and the shapes ----

// Expects `fn` to throw E with a message containing every one of `needles`.
template <class E, class Fn>
void expect_error(Fn&& fn, const std::vector<std::string>& needles) {
  try {
    fn();
    ADD_FAILURE() << "no exception thrown";
  } catch (const E& e) {
    const std::string msg = e.what();
    for (const std::string& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << "'" << n << "' not in: " << msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

TEST(AttentionErrors, WrongRank) {
  Tensor x3 = test::randn({2, 4, 8}, 1);
  expect_error<ShapeError>([&] { ops::flash_attention(x3, x3, x3); }, {"flash_attention", "[2, 4, 8]"});
  Tensor x5 = test::randn({1, 1, 1, 4, 8}, 2);
  expect_error<ShapeError>([&] { ops::flash_attention(x5, x5, x5); }, {"flash_attention", "[1, 1, 1, 4, 8]"});
}

TEST(AttentionErrors, QkvShapeMismatch) {
  Tensor q = test::randn({1, 2, 5, 8}, 3), k = test::randn({1, 2, 6, 8}, 4), v = test::randn({1, 2, 5, 4}, 5);
  expect_error<ShapeError>([&] { ops::flash_attention(q, k, q); }, {"flash_attention", "[1, 2, 5, 8]", "[1, 2, 6, 8]"});
  expect_error<ShapeError>([&] { ops::flash_attention(q, q, v); }, {"flash_attention", "[1, 2, 5, 4]"});
}

TEST(AttentionErrors, EmptySequence) {
  Tensor q = Tensor::zeros({1, 2, 0, 8}, DType::f64);
  expect_error<ShapeError>([&] { ops::flash_attention(q, q, q); }, {"flash_attention", "[1, 2, 0, 8]"});
}

TEST(AttentionErrors, TermWrongShape) {
  Inputs in = make_inputs({1, 2, 5, 8}, kNone, 10);
  ops::AttentionTerms g;
  g.col_bias = test::randn({1, 2, 4}, 11);
  expect_error<ShapeError>([&] { ops::flash_attention(in.q, in.k, in.v, g); },
                           {"flash_attention", "col_bias", "[1, 2, 4]", "[1, 2, 5]"});
  g = {};
  g.row_bias = test::randn({2, 5}, 12);
  expect_error<ShapeError>([&] { ops::flash_attention(in.q, in.k, in.v, g); },
                           {"flash_attention", "row_bias", "[2, 5]"});
  Inputs p = make_inputs({1, 2, 5, 8}, kMod, 13);
  g = p.terms();
  g.modulation_col = test::randn({1, 2, 5, 1}, 14);
  expect_error<ShapeError>([&] { ops::flash_attention(p.q, p.k, p.v, g); },
                           {"flash_attention", "modulation_col", "[1, 2, 5, 1]"});
  g = p.terms();
  g.modulation_alpha = Tensor::from({0.5, 0.5, 0.5}, {3}, DType::f64);  // neither one α nor one per head (2)
  expect_error<ShapeError>([&] { ops::flash_attention(p.q, p.k, p.v, g); },
                           {"flash_attention", "modulation_alpha", "[3]", "[1] or [2]"});
}

TEST(AttentionErrors, ModulationNeedsAllItsTerms) {
  Inputs p = make_inputs({1, 2, 5, 8}, kMod, 15);
  ops::AttentionTerms g = p.terms();
  g.modulation_col = Tensor();
  expect_error<ValueError>([&] { ops::flash_attention(p.q, p.k, p.v, g); }, {"flash_attention", "modulation"});
  g = p.terms();
  g.modulation_row = Tensor();
  expect_error<ValueError>([&] { ops::flash_attention(p.q, p.k, p.v, g); }, {"flash_attention", "modulation"});
  g = p.terms();
  g.modulation_alpha = Tensor();
  expect_error<ValueError>([&] { ops::flash_attention(p.q, p.k, p.v, g); }, {"flash_attention", "modulation"});
  ops::AttentionTerms alpha_only;
  alpha_only.modulation_alpha = p.terms().modulation_alpha;  // α without the terms it would mix in
  expect_error<ValueError>([&] { ops::flash_attention(p.q, p.k, p.v, alpha_only); }, {"flash_attention", "modulation"});
  ops::AttentionOptions opt;
  opt.modulation_entropy = true;  // asks for the entropy of a modulation that is not there
  expect_error<ValueError>([&] { ops::flash_attention(p.q, p.k, p.v, {}, opt); }, {"flash_attention", "modulation"});
}

TEST(AttentionErrors, ModulationTemperatureMustBePositive) {
  Inputs p = make_inputs({1, 1, 3, 4}, kMod, 16);
  for (double tau : {0.0, -1.0, std::numeric_limits<double>::quiet_NaN()}) {
    ops::AttentionTerms g = p.terms();
    g.modulation_temperature = tau;
    expect_error<ValueError>([&] { ops::flash_attention(p.q, p.k, p.v, g); }, {"flash_attention", "temperature"});
  }
}

TEST(AttentionErrors, DTypeMismatch) {
  Tensor q = test::randn({1, 1, 3, 4}, 17), q32 = test::randn({1, 1, 3, 4}, 17, 1.0, DType::f32);
  expect_error<DTypeError>([&] { ops::flash_attention(q, q32, q); }, {"flash_attention", "f64", "f32"});
  ops::AttentionTerms g;
  g.col_bias = test::randn({1, 1, 3}, 18, 1.0, DType::f32);
  expect_error<DTypeError>([&] { ops::flash_attention(q, q, q, g); }, {"flash_attention", "f32"});
  Tensor qi = Tensor::from_ints(std::vector<std::int32_t>(12, 1), {1, 1, 3, 4});
  expect_error<DTypeError>([&] { ops::flash_attention(qi, qi, qi); }, {"flash_attention", "i32"});
}

TEST(AttentionErrors, NegativeWindow) {
  Tensor q = test::randn({1, 1, 3, 4}, 19);
  ops::AttentionOptions opt;
  opt.window = -1;
  expect_error<ValueError>([&] { ops::flash_attention(q, q, q, {}, opt); }, {"flash_attention", "window", "-1"});
}

TEST(AttentionErrors, ActiveQueriesMustBeI32BT) {
  Tensor q = test::randn({2, 1, 3, 4}, 21);
  ops::AttentionOptions opt;
  opt.active_queries = Tensor::from_ints({1, 0, 1}, {1, 3});  // [1, T], not [B, T]
  expect_error<ValueError>([&] { ops::flash_attention(q, q, q, {}, opt); },
                           {"flash_attention", "active_queries", "[2, 3]"});
  opt.active_queries = Tensor::ones({2, 3}, DType::f64);  // not i32
  expect_error<ValueError>([&] { ops::flash_attention(q, q, q, {}, opt); },
                           {"flash_attention", "active_queries", "f64"});
  expect_error<ValueError>([&] { test::reference_attention(q, q, q, {}, opt); }, {"active_queries"});
}

TEST(AttentionErrors, WindowNeedsCausal) {
  Inputs in = make_inputs({1, 2, 5, 8}, kNone, 30);
  ops::AttentionOptions opt;
  opt.causal = false;
  opt.window = 3;
  expect_error<ValueError>([&] { ops::flash_attention(in.q, in.k, in.v, {}, opt); },
                           {"flash_attention", "window 3", "causal"});
  expect_error<ValueError>([&] { test::reference_attention(in.q, in.k, in.v, {}, opt); },
                           {"composed_attention", "window 3", "causal"});
}

TEST(AttentionErrors, CausalNeedsEqualLengths) {
  Inputs in = make_inputs({1, 2, 5, 8, 9}, kNone, 31);
  expect_error<ValueError>([&] { ops::flash_attention(in.q, in.k, in.v); }, {"flash_attention", "Tq 5", "Tk 9"});
  expect_error<ValueError>([&] { test::reference_attention(in.q, in.k, in.v); },
                           {"composed_attention", "Tq 5", "Tk 9"});
}

TEST(AttentionErrors, CrossShapes) {
  Inputs in = make_inputs({1, 2, 5, 8, 9}, kAll, 32);
  ops::AttentionOptions opt;
  opt.causal = false;
  // Each term with the other length: row terms are [B, H, Tq] = [1, 2, 5], column terms [1, 2, 9].
  auto expect_term_error = [&](Tensor ops::AttentionTerms::*field, const char* name, const Shape& wrong,
                               const char* want) {
    ops::AttentionTerms g = in.terms();
    g.*field = Tensor::zeros(wrong, DType::f64);
    const std::string got = shape_str(wrong);
    expect_error<ShapeError>([&] { ops::flash_attention(in.q, in.k, in.v, g, opt); },
                             {"flash_attention", name, got, want});
    expect_error<ShapeError>([&] { test::reference_attention(in.q, in.k, in.v, g, opt); },
                             {"composed_attention", name, got, want});
  };
  expect_term_error(&ops::AttentionTerms::row_bias, "row_bias", {1, 2, 9}, "[1, 2, 5]");
  expect_term_error(&ops::AttentionTerms::col_bias, "col_bias", {1, 2, 5}, "[1, 2, 9]");
  expect_term_error(&ops::AttentionTerms::modulation_row, "modulation_row", {1, 2, 9}, "[1, 2, 5]");
  expect_term_error(&ops::AttentionTerms::modulation_col, "modulation_col", {1, 2, 5}, "[1, 2, 9]");
  // active_queries has one flag per query, [B, Tq].
  opt.active_queries = Tensor::from_ints(std::vector<std::int32_t>(9, 1), {1, 9});
  expect_error<ValueError>([&] { ops::flash_attention(in.q, in.k, in.v, {}, opt); },
                           {"flash_attention", "active_queries", "[1, 5]"});
  opt.active_queries = Tensor();
  // k and v of different lengths, or a head dim or batch other than q's.
  const Tensor v8 = test::randn({1, 2, 8, 8}, 33), k4 = test::randn({1, 2, 9, 4}, 34),
               k_b = test::randn({2, 2, 9, 8}, 35);
  expect_error<ShapeError>([&] { ops::flash_attention(in.q, in.k, v8, {}, opt); },
                           {"flash_attention", "[1, 2, 9, 8]", "[1, 2, 8, 8]"});
  expect_error<ShapeError>([&] { ops::flash_attention(in.q, k4, k4, {}, opt); }, {"flash_attention", "[1, 2, 9, 4]"});
  expect_error<ShapeError>([&] { ops::flash_attention(in.q, k_b, k_b, {}, opt); }, {"flash_attention", "[2, 2, 9, 8]"});
  expect_error<ShapeError>([&] { test::reference_attention(in.q, in.k, v8, {}, opt); }, {"composed_attention"});
}

TEST(AttentionErrors, UndefinedInput) {
  Tensor q = test::randn({1, 1, 3, 4}, 20);
  expect_error<ValueError>([&] { ops::flash_attention(q, Tensor(), q); }, {"flash_attention"});
}

}  // namespace
}  // namespace gattn

// ---- the modulation's forms: softplus, dropout and the modulation sum (the pair gate's options) ----
namespace gattn {
namespace {

// The modulation outputs a softplus modulation has: the sum (the entropy is refused for it).
ops::AttentionOptions sum_options(const Inputs& in, std::int64_t window) {
  ops::AttentionOptions o = options_for(in, window);
  o.modulation_entropy = !in.softplus;
  o.modulation_sum = true;
  return o;
}

TEST(AttentionModulationForms, SoftplusAndTheSumMatchTheReference) {
  std::uint64_t seed = 30000;
  for (const Dims& s : kShapes)
    for (std::int64_t w : {0, 5}) {
      for (bool softplus : {false, true}) {
        Inputs in = make_inputs(s, kAll, seed += 10, 0.8);
        in.softplus = softplus;
        expect_matches_reference(in, sum_options(in, w),
                                 dims_str(s) + (softplus ? " softplus" : " sigmoid") + " window=" + std::to_string(w));
      }
    }
  // Hard: the sum is of the soft G behind the threshold; α per head.
  Inputs hard = make_inputs({1, 3, 70, 16}, kMod, 30500, 1.2, 0.7, {0.6, 0.0, 0.9});
  hard.hard_threshold = 0.45;
  expect_matches_reference(hard, sum_options(hard, 0), "hard, α per head");
  hard.softplus = true;
  hard.hard_threshold = 0.8;
  expect_matches_reference(hard, sum_options(hard, 0), "hard softplus, α per head");
}

TEST(AttentionModulationForms, SoftplusAndTheSumAgainstScalarLoops) {
  // One head, T = 3, d = 2, written out: A_ij = P_ij·(α·softplus(u_ij) + 1 − α), u = (a_i + b_j)/τ,
  // y_i = Σ_j A_ij v_j, Σ = Σ_{j ≤ i} softplus(u_ij).
  const std::int64_t T = 3, d = 2;
  Inputs in = make_inputs({1, 1, T, d}, kMod, 30600, 0.7, 0.4);
  in.softplus = true;
  NoGradGuard no_grad;
  ops::AttentionOptions o;
  o.modulation_sum = true;
  const ops::AttentionResult r = ops::flash_attention(in.q, in.k, in.v, in.terms(), o);
  const std::vector<double> q = in.q.to_vector(), k = in.k.to_vector(), v = in.v.to_vector(),
                            a = in.mod_row.to_vector(), b = in.mod_col.to_vector(), y = r.out.to_vector();
  const double alpha = 0.4, tau = 0.7, scale = 1.0 / std::sqrt(static_cast<double>(d));
  double total = 0;
  for (std::int64_t i = 0; i < T; ++i) {
    std::vector<double> S(static_cast<std::size_t>(i + 1));
    double m = -1e300, l = 0;
    for (std::int64_t j = 0; j <= i; ++j) {
      double dot = 0;
      for (std::int64_t x = 0; x < d; ++x) dot += q[i * d + x] * k[j * d + x];
      S[j] = dot * scale;
      m = std::max(m, S[j]);
    }
    for (std::int64_t j = 0; j <= i; ++j) l += std::exp(S[j] - m);
    for (std::int64_t x = 0; x < d; ++x) {
      double yx = 0;
      for (std::int64_t j = 0; j <= i; ++j) {
        const double G = std::log1p(std::exp((a[i] + b[j]) / tau));
        yx += std::exp(S[j] - m) / l * (alpha * G + 1 - alpha) * v[j * d + x];
        if (x == 0) total += G;
      }
      EXPECT_NEAR(y[i * d + x], yx, 1e-12) << "i=" << i << " x=" << x;
    }
  }
  EXPECT_NEAR(r.modulation_sum.item(), total, 1e-12);
}

TEST(AttentionModulationForms, DropoutMatchesTheReferenceAndDrawsLikeIt) {
  // The same generator state on both sides, noise and dropout from one stream (as the pair gate
  // passes them): identical masks, outputs, gradients, and the same words consumed.
  for (bool softplus : {false, true})
    for (std::int64_t w : {0, 7}) {
      SCOPED_TRACE(std::string(softplus ? "softplus" : "sigmoid") + " window " + std::to_string(w));
      Inputs in = make_inputs({2, 2, 70, 16}, kAll, 30700 + w, 0.9);
      in.softplus = softplus;
      in.dropout = 0.3;
      Generator g_fused(77, 3), g_ref(77, 3);
      g_fused.reserve(5);
      g_ref.reserve(5);
      const ops::AttentionOptions opt = sum_options(in, w);
      RunResult fused = run(ops::flash_attention, in, opt, {}, 99, softplus ? nullptr : &g_fused, &g_fused);
      RunResult ref = run(test::reference_attention, in, opt, {}, 99, softplus ? nullptr : &g_ref, &g_ref);
      EXPECT_EQ(g_fused.state().offset, g_ref.state().offset);
      EXPECT_GE(g_fused.state().offset, 5u + 2 * 2 * 70 * 70);  // one dropout word per (b·h, i, j)
      EXPECT_TRUE(test::all_close(fused.result.out, ref.result.out, 1e-9, 1e-9));
      EXPECT_TRUE(test::all_close(fused.result.modulation_sum, ref.result.modulation_sum, 1e-9, 1e-9));
      for (std::size_t i = 0; i < fused.grads.size(); ++i)
        EXPECT_TRUE(test::all_close(fused.grads[i], ref.grads[i], 1e-9, 1e-9)) << "d" << kLeafNames[i];
    }
}

TEST(AttentionModulationForms, DropoutDropsTheShareAskedAndDroppedEntriesArePlain) {
  // α = 1 and G ≈ 0 everywhere: a kept entry weighs ≈ 0, a dropped one reads G = 1. The applied
  // values' moments (the statistics count Gv) are then the dropped share, p within sampling error,
  // and an α gradient of 0 on dropped entries.
  Inputs in = make_inputs({1, 2, 128, 16}, kMod, 30800, 1.0, 1.0);
  in.mod_row = Tensor::full({1, 2, 128}, -40, DType::f64);
  in.mod_col = Tensor::full({1, 2, 128}, 0, DType::f64);
  in.dropout = 0.3;
  NoGradGuard no_grad;
  ops::AttentionStats stats;
  ops::AttentionOptions o;
  o.stats = &stats;
  Generator g(11, 2);
  ops::flash_attention(in.q, in.k, in.v, in.terms(nullptr, &g), o);
  const double n = static_cast<double>(stats.modulation.count);
  EXPECT_EQ(stats.modulation.count, 2 * 128 * 129 / 2);
  EXPECT_NEAR(stats.modulation.mean(), 0.3, 3 * std::sqrt(0.3 * 0.7 / n));
  EXPECT_EQ(stats.modulation.below_0_1 + stats.modulation.above_0_9, stats.modulation.count);  // 0 or 1
  // p = 0 with a source: bitwise no dropout, no word drawn.
  Inputs none = make_inputs({1, 2, 40, 16}, kMod, 30900);
  Generator unused(11, 2);
  const ops::AttentionResult a = ops::flash_attention(none.q, none.k, none.v, none.terms(nullptr, &unused), {});
  const ops::AttentionResult b = ops::flash_attention(none.q, none.k, none.v, none.terms(), {});
  EXPECT_TRUE(test::all_close(a.out, b.out, 0, 0));
  EXPECT_EQ(unused.state().offset, 0u);
}

// f64 gradchecks of the three forms: each evaluation draws the same mask from a fresh generator.
void gradcheck_form(const Dims& s, std::int64_t window, bool softplus, double dropout) {
  SCOPED_TRACE(dims_str(s) + " window=" + std::to_string(window) + (softplus ? " softplus" : " sigmoid") +
               " dropout=" + std::to_string(dropout));
  const Inputs in = make_inputs(s, kAll, 31000 + window, 0.8);
  std::vector<Tensor> xs;
  for (const Tensor& t : in.leaves())
    if (t.defined()) xs.push_back(t.detach());
  auto f = [&](const std::vector<Tensor>& x) {
    Inputs cur = in;
    Tensor* fields[] = {&cur.q,        &cur.k,       &cur.v,       &cur.row_bias,
                        &cur.col_bias, &cur.mod_row, &cur.mod_col, &cur.mod_alpha};
    for (std::size_t n = 0; n < x.size(); ++n) *fields[n] = x[n];
    cur.softplus = softplus;
    cur.dropout = dropout;
    Generator mask(123, 4);
    return all_outputs(ops::flash_attention(cur.q, cur.k, cur.v, cur.terms(nullptr, &mask), sum_options(cur, window)));
  };
  GradcheckOptions go;
  go.atol = 1e-6;
  go.rtol = 1e-5;
  EXPECT_TRUE(test::grads_ok(f, xs, go));
}

TEST(AttentionGradcheck, ModulationSoftplusDropoutAndSum) {
  gradcheck_form({1, 2, 5, 3}, 0, true, 0.0);
  gradcheck_form({1, 2, 5, 3}, 0, false, 0.4);
  gradcheck_form({1, 2, 6, 3}, 2, true, 0.4);
  gradcheck_form({1, 1, 66, 1}, 0, true, 0.25);
}

TEST(AttentionModulationForms, Float32MatchesFloat64) {
  // softplus and dropout leave the vectorised f32 loops for the general ones, in both dtypes.
  for (bool softplus : {false, true}) {
    Inputs in64 = make_inputs({2, 2, 130, 32}, kCol | kMod, 31100 + softplus, 0.8, 0.6);
    in64.softplus = softplus;
    expect_f32_matches_f64(in64, {});
  }
}

TEST(AttentionErrors, ModulationFormsRefuseWhatMeansNothing) {
  Inputs in = make_inputs({1, 1, 4, 8}, kMod, 31200);
  in.softplus = true;
  ops::AttentionOptions entropy;
  entropy.modulation_entropy = true;
  expect_error<ValueError>([&] { ops::flash_attention(in.q, in.k, in.v, in.terms(), entropy); },
                           {"modulation_entropy", "softplus"});
  ops::AttentionOptions pruned;
  pruned.prune_threshold = 1e-3;
  expect_error<ValueError>([&] { ops::flash_attention(in.q, in.k, in.v, in.terms(), pruned); },
                           {"prune_threshold", "softplus"});
  in.softplus = false;
  ops::AttentionTerms t = in.terms();
  t.modulation_dropout = 0.2;  // no source
  expect_error<ValueError>([&] { ops::flash_attention(in.q, in.k, in.v, t, {}); },
                           {"modulation_dropout", "random source"});
  Generator g(1);
  t.modulation_dropout_noise = &g;
  t.modulation_dropout = 1.0;
  expect_error<ValueError>([&] { ops::flash_attention(in.q, in.k, in.v, t, {}); }, {"modulation_dropout", "[0, 1)"});
  Inputs plain = make_inputs({1, 1, 4, 8}, kNone, 31300);
  ops::AttentionOptions sum;
  sum.modulation_sum = true;
  expect_error<ValueError>([&] { ops::flash_attention(plain.q, plain.k, plain.v, plain.terms(), sum); },
                           {"modulation_sum"});
}

}  // namespace
}  // namespace gattn
