// Grouped-query attention in the fused CPU attention (ops::flash_attention with k, v [B, H_kv, Tk,
// d], H_kv dividing H): against the composed reference, which repeats each key/value head for its
// query heads, for every term family, window, mask, skipped rows, the entropy outputs and the
// statistics, forward and every gradient; against the op itself on repeated keys and values (the
// forward and the per-query-head gradients bit for bit, dK and dV the group's sums); the
// backward's split of small groups, whatever the thread count; gradchecks; the errors. The cached
// attention with a grouped cache: against the full op, and against a cache of repeated heads under
// a KV budget (top-k keys, skipped rows, per-head positions, accumulated attention).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "framework/runtime/threads.h"
#include "ops/attention/attention.h"
#include "ops/attention/cached_attention.h"
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

// Term sets (bit flags): kCol a column bias log σ(f); kRel a prefix sum c as row_bias = c,
// col_bias = −c; kRow an independent row bias; kMod the modulation; kHard makes it a hard one.
constexpr unsigned kNone = 0, kCol = 1, kRel = 2, kRow = 4, kMod = 8, kHard = 16, kAll = kCol | kRel | kMod;

// q [B, H, T, d]; k, v [B, Hkv, Tk, d] (Tk 0: T).
struct Dims {
  std::int64_t B, H, Hkv, T, d, Tk = 0;
  std::int64_t keys() const { return Tk ? Tk : T; }
  std::string str() const {
    return "B=" + std::to_string(B) + " H=" + std::to_string(H) + " H_kv=" + std::to_string(Hkv) +
           " T=" + std::to_string(T) + (Tk ? " Tk=" + std::to_string(Tk) : std::string()) + " d=" + std::to_string(d);
  }
};

using Inputs = test::AttentionLeaves;
constexpr auto& kLeafNames = test::kAttentionLeafNames;

// Leaves requiring grad; every term is per query head ([B, H, ·]).
Inputs make_inputs(const Dims& s, unsigned terms, std::uint64_t seed, double tau = 0.8) {
  NoGradGuard no_grad;
  Inputs in;
  const std::int64_t Tk = s.keys();
  const Shape rs{s.B, s.H, s.T}, cs{s.B, s.H, Tk};
  in.q = test::randn({s.B, s.H, s.T, s.d}, seed, 1.2);
  in.k = test::randn({s.B, s.Hkv, Tk, s.d}, seed + 1, 1.2);
  in.v = test::randn({s.B, s.Hkv, Tk, s.d}, seed + 2);
  if (terms & kCol) in.col_bias = ops::log_sigmoid(test::randn(cs, seed + 3, 2.0));
  if (terms & kRel) {
    const std::int64_t Tmax = std::max(s.T, Tk);
    const Tensor c = ops::cumsum(ops::log_sigmoid(ops::add_scalar(test::randn({s.B, s.H, Tmax}, seed + 4), 2.0)), 2);
    in.row_bias = ops::slice(c, 2, 0, s.T);
    const Tensor c_k = ops::slice(c, 2, 0, Tk);
    in.col_bias = in.col_bias.defined() ? in.col_bias - c_k : ops::neg(c_k);
  }
  if (terms & kRow)
    in.row_bias = in.row_bias.defined() ? in.row_bias + test::randn(rs, seed + 8) : test::randn(rs, seed + 8);
  if (terms & (kMod | kHard)) {
    in.mod_row = test::randn(rs, seed + 5, 1.5);
    in.mod_col = test::randn(cs, seed + 6, 1.5);
    in.mod_alpha = Tensor::from({0.7}, {1}, DType::f64);
    in.tau = tau;
    if (terms & kHard) in.hard_threshold = 0.45;
  }
  for (Tensor t : in.leaves())
    if (t.defined()) t.set_requires_grad(true);
  return in;
}

using AttentionFn = ops::AttentionResult (*)(const Tensor&, const Tensor&, const Tensor&, const ops::AttentionTerms&,
                                             const ops::AttentionOptions&);

struct RunResult {
  ops::AttentionResult result;
  std::vector<Tensor> grads;  // .grad of each leaf (undefined where absent)
};

// One implementation on `in` ([k, v] replaced by `k`, `v` when given), backward of Σ out⊙W1 +
// Σ row_entropy⊙W2 + Σ modulation_entropy⊙W3; collects (then clears) the leaves' gradients.
RunResult run(AttentionFn fn, const Inputs& in, const ops::AttentionOptions& opt, Generator* noise = nullptr,
              const Tensor& k = {}, const Tensor& v = {}) {
  RunResult r;
  r.result = fn(in.q, k.defined() ? k : in.k, v.defined() ? v : in.v, in.terms(noise), opt);
  const Shape& qs = in.q.shape();
  const DType dt = in.q.dtype();
  Tensor loss = ops::sum(r.result.out * test::randn(qs, 99, 1.0, dt));
  if (r.result.row_entropy.defined())
    loss = loss + ops::sum(r.result.row_entropy * test::randn({qs[0], qs[1], qs[2]}, 100, 1.0, dt));
  if (r.result.modulation_entropy.defined())
    loss = loss + ops::sum(r.result.modulation_entropy * test::randn({qs[0], qs[1]}, 101, 1.0, dt));
  loss.backward();
  std::vector<Tensor> leaves = in.leaves();
  if (k.defined()) leaves[1] = k;
  if (v.defined()) leaves[2] = v;
  for (Tensor t : leaves) {
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

void expect_matches_reference(const Inputs& in, const ops::AttentionOptions& opt, const std::string& what,
                              std::uint64_t noise_seed = 0) {
  SCOPED_TRACE(what);
  Generator g_fused(noise_seed, 3), g_ref(noise_seed, 3);
  RunResult fused = run(ops::flash_attention, in, opt, noise_seed ? &g_fused : nullptr);
  RunResult ref = run(test::reference_attention, in, opt, noise_seed ? &g_ref : nullptr);
  EXPECT_EQ(g_fused.state().offset, g_ref.state().offset);
  const double tol = 1e-9;
  EXPECT_TRUE(test::all_close(fused.result.out, ref.result.out, tol, tol)) << "out";
  if (ref.result.row_entropy.defined()) {
    EXPECT_TRUE(test::all_close(fused.result.row_entropy, ref.result.row_entropy, tol, tol)) << "row_entropy";
  }
  if (ref.result.modulation_entropy.defined()) {
    EXPECT_TRUE(test::all_close(fused.result.modulation_entropy, ref.result.modulation_entropy, tol, tol))
        << "modulation_entropy";
  }
  for (std::size_t i = 0; i < fused.grads.size(); ++i) {
    if (!ref.grads[i].defined()) continue;
    ASSERT_TRUE(fused.grads[i].defined()) << "d" << kLeafNames[i];
    EXPECT_EQ(fused.grads[i].shape(), in.leaves()[i].shape()) << "d" << kLeafNames[i];
    EXPECT_TRUE(test::all_close(fused.grads[i], ref.grads[i], tol, tol)) << "d" << kLeafNames[i];
  }
}

// Every grouping of H = 4 query heads: 4 per key/value head, 2, and none.
const std::int64_t kKvHeads[] = {1, 2, 4};

// An i32 [B, T] mask, each row active with probability 1/2, rows 0–63 skipped but row 5.
Tensor some_active(std::int64_t B, std::int64_t T, std::uint64_t seed) {
  const std::vector<double> u = test::rand({B, T}, seed, 0.0, 1.0).to_vector();
  std::vector<std::int32_t> a(u.size());
  for (std::size_t i = 0; i < u.size(); ++i) {
    const std::int64_t row = static_cast<std::int64_t>(i) % T;
    a[i] = row < 64 ? row == 5 : u[i] < 0.5;
  }
  return Tensor::from_ints(a, {B, T});
}

// ---- against the reference ----

TEST(GqaAttentionVsReference, EveryTermFamilyAndWindow) {
  std::uint64_t seed = 100;
  for (std::int64_t Hkv : kKvHeads)
    for (const Dims& s : {Dims{2, 4, Hkv, 70, 16}, Dims{1, 4, Hkv, 130, 32}, Dims{1, 4, Hkv, 1, 8}})
      for (unsigned terms : {kNone, kCol, kRel, kRow | kCol, kMod, kMod | kHard, kAll})
        for (std::int64_t w : {0, 5}) {
          Inputs in = make_inputs(s, terms, seed += 10);
          expect_matches_reference(in, options_for(in, w),
                                   s.str() + " terms=" + std::to_string(terms) + " window=" + std::to_string(w));
        }
}

TEST(GqaAttentionVsReference, NotCausalAndCross) {
  std::uint64_t seed = 2000;
  for (std::int64_t Hkv : kKvHeads)
    for (const Dims& s : {Dims{2, 4, Hkv, 37, 16, 90}, Dims{1, 4, Hkv, 70, 32}, Dims{1, 4, Hkv, 66, 8, 3}})
      for (unsigned terms : {kNone, kAll, kRow | kMod | kHard}) {
        Inputs in = make_inputs(s, terms, seed += 10);
        expect_matches_reference(in, options_for(in, 0, false), s.str() + " terms=" + std::to_string(terms));
      }
}

TEST(GqaAttentionVsReference, SkippedQueryRows) {
  std::uint64_t seed = 3000;
  for (std::int64_t Hkv : {1, 2})
    for (const Dims& s : {Dims{2, 4, Hkv, 130, 16}, Dims{2, 4, Hkv, 70, 16, 45}})
      for (unsigned terms : {kNone, kAll})
        for (std::int64_t w : {0, 7}) {
          const bool causal = s.Tk == 0;
          if (!causal && w) continue;
          Inputs in = make_inputs(s, terms, seed += 10);
          ops::AttentionOptions opt = options_for(in, w, causal);
          opt.active_queries = some_active(s.B, s.T, seed);
          expect_matches_reference(in, opt,
                                   s.str() + " terms=" + std::to_string(terms) + " window=" + std::to_string(w));
        }
}

TEST(GqaAttentionVsReference, ModulationNoiseByQueryHead) {
  // Noise word (b·H + h, i, j) of the query head: the same draws as the reference.
  for (std::int64_t Hkv : {1, 2}) {
    Inputs in = make_inputs({2, 4, Hkv, 70, 16}, kAll, 4000 + static_cast<std::uint64_t>(Hkv), 0.9);
    for (std::int64_t w : {0, 9})
      expect_matches_reference(in, options_for(in, w), "H_kv=" + std::to_string(Hkv) + " window=" + std::to_string(w),
                               77);
  }
}

TEST(GqaAttentionVsReference, Statistics) {
  for (std::int64_t Hkv : {1, 2})
    for (unsigned terms : {kNone, kAll})
      for (bool causal : {true, false}) {
        SCOPED_TRACE("H_kv=" + std::to_string(Hkv) + " terms=" + std::to_string(terms) + (causal ? "" : " not causal"));
        Inputs in = make_inputs({2, 4, Hkv, 70, 16}, terms, 5000 + terms);
        ops::AttentionStats fused, ref;
        ops::AttentionOptions opt;
        opt.causal = causal;
        opt.window = causal ? 9 : 0;
        opt.active_queries = some_active(2, 70, 5001);
        opt.stats = &fused;
        ops::flash_attention(in.q, in.k, in.v, in.terms(), opt);
        opt.stats = &ref;
        test::reference_attention(in.q, in.k, in.v, in.terms(), opt);
        EXPECT_EQ(fused.entropy_count, ref.entropy_count);
        EXPECT_NEAR(fused.entropy_sum, ref.entropy_sum, 1e-9 * (1 + std::abs(ref.entropy_sum)));
        EXPECT_EQ(fused.sink_count, ref.sink_count);
        EXPECT_NEAR(fused.sink_sum, ref.sink_sum, 1e-9 * (1 + std::abs(ref.sink_sum)));
        EXPECT_EQ(fused.modulation.count, ref.modulation.count);
        EXPECT_NEAR(fused.modulation.sum, ref.modulation.sum, 1e-9 * (1 + std::abs(ref.modulation.sum)));
      }
}

// ---- the backward's units: whole groups, parts of groups, one head a part ----

// Shapes whose B·H_kv gives the backward every kind of split: groups of 4 in 4 parts (2 key/value
// heads), in 2 parts (16), whole (32).
const Dims kSplitShapes[] = {{1, 8, 2, 70, 16}, {8, 8, 2, 40, 8}, {16, 4, 2, 40, 8}};

TEST(GqaAttentionBackward, EverySplitMatchesTheReference) {
  std::uint64_t seed = 6000;
  for (const Dims& s : kSplitShapes) {
    Inputs in = make_inputs(s, kAll, seed += 10);
    expect_matches_reference(in, options_for(in, 0), s.str());
  }
}

TEST(GqaAttentionBackward, TheBitsDoNotDependOnTheThreadCount) {
  const int threads = num_threads();
  for (const Dims& s : kSplitShapes) {
    SCOPED_TRACE(s.str());
    Inputs in = make_inputs(s, kAll, 6100);
    std::vector<RunResult> runs;
    for (int n : {1, 2, 3}) {
      set_num_threads(n);
      runs.push_back(run(ops::flash_attention, in, options_for(in, 0)));
    }
    set_num_threads(threads);
    for (std::size_t r = 1; r < runs.size(); ++r)
      for (std::size_t i = 0; i < runs[0].grads.size(); ++i)
        if (runs[0].grads[i].defined()) {
          EXPECT_TRUE(test::all_close(runs[r].grads[i], runs[0].grads[i], 0, 0)) << "d" << kLeafNames[i];
        }
  }
}

// x [B, H_kv, T, d] with each head repeated for its group of `group` query heads, as a fresh leaf.
Tensor repeated(const Tensor& x, std::int64_t group) {
  NoGradGuard no_grad;
  std::vector<Tensor> copies(static_cast<std::size_t>(group), ops::unsqueeze(x, 2));
  Tensor r = ops::reshape(ops::concat(copies, 2), {x.size(0), x.size(1) * group, x.size(2), x.size(3)}).detach();
  r.set_requires_grad(true);
  return r;
}

// [B, H_kv·group, T, d] summed over each group: [B, H_kv, T, d].
Tensor group_sums(const Tensor& x, std::int64_t group) {
  NoGradGuard no_grad;
  return ops::sum(ops::reshape(x, {x.size(0), x.size(1) / group, group, x.size(2), x.size(3)}), {2});
}

TEST(GqaAttentionBackward, IsTheOpOnRepeatedKeysAndValues) {
  // Reading the key/value head in place computes what the op computes on copies of it: the
  // outputs, statistics and every per-query-head gradient bit for bit, dK and dV the sums of the
  // copies' gradients over each group (in another order, so to rounding).
  std::uint64_t seed = 7000;
  for (const Dims& s : {Dims{2, 4, 1, 130, 32}, Dims{1, 8, 2, 70, 16}, Dims{16, 4, 2, 40, 8}})
    for (unsigned terms : {kNone, kAll, kRow | kMod | kHard}) {
      SCOPED_TRACE(s.str() + " terms=" + std::to_string(terms));
      Inputs in = make_inputs(s, terms, seed += 10);
      const std::int64_t group = s.H / s.Hkv;
      ops::AttentionOptions opt = options_for(in, 5);
      ops::AttentionStats st_gqa, st_rep;
      opt.stats = &st_gqa;
      RunResult gqa = run(ops::flash_attention, in, opt);
      opt.stats = &st_rep;
      RunResult rep = run(ops::flash_attention, in, opt, nullptr, repeated(in.k, group), repeated(in.v, group));
      EXPECT_TRUE(test::all_close(gqa.result.out, rep.result.out, 0, 0));
      EXPECT_TRUE(test::all_close(gqa.result.row_entropy, rep.result.row_entropy, 0, 0));
      if (in.modulated()) {
        EXPECT_TRUE(test::all_close(gqa.result.modulation_entropy, rep.result.modulation_entropy, 0, 0));
      }
      EXPECT_EQ(st_gqa.entropy_sum, st_rep.entropy_sum);
      EXPECT_EQ(st_gqa.sink_sum, st_rep.sink_sum);
      EXPECT_EQ(st_gqa.modulation.sum, st_rep.modulation.sum);
      for (std::size_t i = 0; i < gqa.grads.size(); ++i) {
        if (!gqa.grads[i].defined()) continue;
        if (i == 1 || i == 2) {
          EXPECT_TRUE(test::all_close(gqa.grads[i], group_sums(rep.grads[i], group), 1e-12, 1e-12))
              << "d" << kLeafNames[i];
        } else {
          EXPECT_TRUE(test::all_close(gqa.grads[i], rep.grads[i], 0, 0)) << "d" << kLeafNames[i];
        }
      }
    }
}

TEST(GqaAttentionBackward, Float32MatchesFloat64) {
  // f32 takes the vectorised loops (the modulation's fast path too, without entropies or noise).
  for (unsigned terms : {kNone, kCol | kMod}) {
    SCOPED_TRACE("terms=" + std::to_string(terms));
    Inputs in = make_inputs({2, 4, 2, 130, 32}, terms, 7500);
    Inputs in32 = in;
    for (Tensor* t :
         {&in32.q, &in32.k, &in32.v, &in32.row_bias, &in32.col_bias, &in32.mod_row, &in32.mod_col, &in32.mod_alpha})
      if (t->defined()) {
        *t = t->detach().to(DType::f32).clone();
        t->set_requires_grad(true);
      }
    ops::AttentionOptions opt;
    opt.window = 16;
    RunResult a = run(ops::flash_attention, in32, opt), b = run(ops::flash_attention, in, opt);
    EXPECT_TRUE(test::all_close(a.result.out, b.result.out, 2e-5, 1e-4));
    for (std::size_t i = 0; i < a.grads.size(); ++i)
      if (b.grads[i].defined()) {
        EXPECT_TRUE(test::all_close(a.grads[i], b.grads[i], i == 7 ? 1e-3 : 1e-4, 1e-4)) << "d" << kLeafNames[i];
      }
  }
}

// ---- gradcheck (f64, central differences) through every output ----

Tensor all_outputs(const ops::AttentionResult& r) {
  std::vector<Tensor> parts{ops::reshape(r.out, {-1})};
  if (r.row_entropy.defined()) parts.push_back(ops::reshape(r.row_entropy, {-1}));
  if (r.modulation_entropy.defined()) parts.push_back(ops::reshape(r.modulation_entropy, {-1}));
  return ops::concat(parts, 0);
}

void gradcheck_gqa(const Dims& s, unsigned terms, std::int64_t window, bool causal = true, const Tensor& active = {},
                   std::uint64_t noise_seed = 0) {
  SCOPED_TRACE(s.str() + " terms=" + std::to_string(terms) + " window=" + std::to_string(window) +
               (causal ? "" : " not causal") + (active.defined() ? " skipped rows" : ""));
  Inputs in = make_inputs(s, terms, 8000 + terms, 0.9);
  std::vector<Tensor> xs;
  for (const Tensor& t : in.leaves())
    if (t.defined()) xs.push_back(t.detach());
  auto f = [&](const std::vector<Tensor>& x) {
    Inputs cur = in;
    std::size_t n = 0;
    for (Tensor* t : {&cur.q, &cur.k, &cur.v, &cur.row_bias, &cur.col_bias, &cur.mod_row, &cur.mod_col, &cur.mod_alpha})
      if (t->defined()) *t = x[n++];
    Generator noise(noise_seed);  // a fresh generator per call: the same noise every evaluation
    ops::AttentionOptions opt = options_for(cur, window, causal);
    opt.active_queries = active;
    return all_outputs(ops::flash_attention(cur.q, cur.k, cur.v, cur.terms(noise_seed ? &noise : nullptr), opt));
  };
  GradcheckOptions go;
  go.atol = 1e-6;
  go.rtol = 1e-5;
  EXPECT_TRUE(test::grads_ok(f, xs, go));
}

TEST(GqaAttentionGradcheck, QKVAndEveryTerm) {
  gradcheck_gqa({1, 4, 2, 5, 3}, kNone, 0);
  gradcheck_gqa({1, 4, 2, 5, 3}, kAll | kRow, 0);
  gradcheck_gqa({2, 4, 1, 5, 3}, kAll, 2);
  gradcheck_gqa({1, 4, 1, 6, 3}, kMod, 0, true, {}, 42);  // with the modulation's noise
}

TEST(GqaAttentionGradcheck, NotCausalCrossAndSkippedRows) {
  gradcheck_gqa({1, 4, 2, 6, 3, 4}, kAll, 0, false, Tensor::from_ints({1, 0, 1, 1, 0, 1}, {1, 6}));
  gradcheck_gqa({1, 2, 1, 4, 2, 7}, kRow | kCol, 0, false);
}

TEST(GqaAttentionGradcheck, AcrossTilesAndSplitGroups) {
  gradcheck_gqa({1, 2, 1, 66, 1}, kAll, 10);  // two query and key tiles, one key/value head for two
  gradcheck_gqa({1, 8, 2, 4, 2}, kAll, 0);    // groups of 4 split into 4 units
}

// ---- bad input ----

TEST(GqaAttentionErrors, HeadCountsNameTheShapes) {
  const Tensor q = test::randn({1, 4, 5, 8}, 1), k3 = test::randn({1, 3, 5, 8}, 2), k2 = test::randn({1, 2, 5, 8}, 3),
               k8 = test::randn({1, 8, 5, 8}, 4);
  auto expect_shape_error = [](const std::function<void()>& fn, const std::vector<std::string>& needles) {
    const std::string msg = test::message_of<ShapeError>(fn);
    for (const std::string& n : needles) EXPECT_TRUE(test::contains(msg, n));
  };
  // H not a multiple of H_kv, or H_kv above H.
  expect_shape_error([&] { ops::flash_attention(q, k3, k3); },
                     {"flash_attention", "3 heads", "must divide q's 4", "[1, 4, 5, 8]", "[1, 3, 5, 8]"});
  expect_shape_error([&] { ops::flash_attention(q, k8, k8); }, {"flash_attention", "8 heads", "[1, 8, 5, 8]"});
  // k and v with different head counts.
  expect_shape_error([&] { ops::flash_attention(q, k2, k8); },
                     {"flash_attention", "one shape", "k [1, 2, 5, 8]", "v [1, 8, 5, 8]"});
  // A term shaped by the key/value heads instead of the query heads.
  ops::AttentionTerms t;
  t.col_bias = test::randn({1, 2, 5}, 5);
  expect_shape_error([&] { ops::flash_attention(q, k2, k2, t); },
                     {"flash_attention", "col_bias", "[1, 2, 5]", "expected [1, 4, 5]"});
  t = {};
  t.modulation_row = test::randn({1, 2, 5}, 6);
  t.modulation_col = test::randn({1, 4, 5}, 7);
  t.modulation_alpha = Tensor::from({0.5}, {1}, DType::f64);
  expect_shape_error([&] { ops::flash_attention(q, k2, k2, t); }, {"flash_attention", "modulation_row", "[1, 2, 5]"});
  // The reference refuses the same.
  expect_shape_error([&] { test::reference_attention(q, k3, k3); }, {"composed_attention", "[1, 3, 5, 8]"});
  expect_shape_error([&] { test::reference_attention(q, k2, k8); }, {"composed_attention", "[1, 8, 5, 8]"});
}

// ---- cached attention (generation) with grouped key/value heads ----

// x [B, Hx, T, ·] followed by rows of `fill` up to `capacity` along axis 2.
Tensor padded(const Tensor& x, std::int64_t capacity, double fill) {
  Shape pad = x.shape();
  pad[2] = capacity - x.size(2);
  return ops::concat({x.detach(), Tensor::full(pad, fill, x.dtype())}, 2);
}

TEST(GqaCachedAttention, MatchesTheFullOpOnTheNewestRows) {
  const std::int64_t B = 2, H = 4, T = 9, d = 8, Tq = 3, capacity = T + 4;
  std::uint64_t seed = 9000;
  for (std::int64_t Hkv : {1, 2})
    for (unsigned terms : {kNone, kCol | kRel, kMod, kAll, kMod | kHard})
      for (std::int64_t w : {0, 3}) {
        SCOPED_TRACE("H_kv=" + std::to_string(Hkv) + " terms=" + std::to_string(terms) +
                     " window=" + std::to_string(w));
        NoGradGuard no_grad;
        const Inputs full = make_inputs({B, H, Hkv, T, d}, terms, seed += 10, 0.5);
        ops::AttentionOptions opt;
        opt.window = w;
        const Tensor want =
            ops::slice(ops::flash_attention(full.q, full.k, full.v, full.terms(), opt).out, 2, T - Tq, T);
        ops::CachedAttentionInputs in;
        in.q = ops::slice(full.q, 2, T - Tq, T).detach();
        in.k = padded(full.k, capacity, 1e3);  // rows past `length` must be ignored
        in.v = padded(full.v, capacity, 1e3);
        in.length = T;
        in.window = w;
        if (full.row_bias.defined()) in.row_bias = ops::slice(full.row_bias, 2, T - Tq, T).detach();
        if (full.col_bias.defined()) in.col_bias = padded(full.col_bias, capacity, -7);
        if (full.modulated()) {
          in.modulation_row = ops::slice(full.mod_row, 2, T - Tq, T).detach();
          in.modulation_col = padded(full.mod_col, capacity, -7);
          in.modulation_alpha = 0.7;
          in.modulation_temperature = full.tau;
          in.modulation_hard_threshold = full.hard_threshold;
        }
        EXPECT_TRUE(test::all_close(ops::cached_attention(in), want, 1e-12, 1e-10));
      }
}

TEST(GqaCachedAttention, AlphaPerHeadMatchesTheFullOp) {
  // α per query head (0 on some: the pair gate's `heads`), in generation as in training.
  const std::int64_t B = 2, H = 4, T = 9, d = 8, Tq = 2, capacity = T + 3;
  const std::vector<double> alpha{0.0, 0.6, 0.25, 0.0};
  for (std::int64_t Hkv : {2, 4}) {
    SCOPED_TRACE("H_kv=" + std::to_string(Hkv));
    NoGradGuard no_grad;
    Inputs full = make_inputs({B, H, Hkv, T, d}, kMod, 9500 + static_cast<std::uint64_t>(Hkv), 0.5);
    full.mod_alpha = Tensor::from(alpha, {H}, DType::f64);
    const Tensor want = ops::slice(ops::flash_attention(full.q, full.k, full.v, full.terms()).out, 2, T - Tq, T);
    ops::CachedAttentionInputs in;
    in.q = ops::slice(full.q, 2, T - Tq, T).detach();
    in.k = padded(full.k, capacity, 1e3);
    in.v = padded(full.v, capacity, 1e3);
    in.length = T;
    in.modulation_row = ops::slice(full.mod_row, 2, T - Tq, T).detach();
    in.modulation_col = padded(full.mod_col, capacity, -7);
    in.modulation_alpha_by_head = alpha;
    in.modulation_temperature = full.tau;
    EXPECT_TRUE(test::all_close(ops::cached_attention(in), want, 1e-12, 1e-10));
    in.modulation_alpha_by_head = {0.5};
    EXPECT_THROW(ops::cached_attention(in), ShapeError);
  }
}

TEST(GqaCachedAttention, IsTheCacheOfRepeatedHeadsUnderABudget) {
  // Top-k keys, skipped rows, per-head key positions and the accumulated attention (H2O) are per
  // query head: the same bits as a cache holding a copy of each key/value head per query head.
  NoGradGuard no_grad;
  const std::int64_t B = 2, H = 4, Hkv = 2, Tq = 2, d = 8, capacity = 12, length = 10;
  ops::CachedAttentionInputs in;
  in.q = test::randn({B, H, Tq, d}, 1);
  in.k = test::randn({B, Hkv, capacity, d}, 2);
  in.v = test::randn({B, Hkv, capacity, d}, 3);
  in.length = length;
  in.window = 6;
  in.col_bias = test::randn({B, H, capacity}, 4);
  in.modulation_row = test::randn({B, H, Tq}, 5);
  in.modulation_col = test::randn({B, H, capacity}, 6);
  in.modulation_alpha = 0.6;
  in.top_k_keys = 3;
  std::vector<std::int32_t> positions(static_cast<std::size_t>(B * H * capacity)), skip(B * H * Tq, 0);
  for (std::size_t r = 0; r < positions.size(); ++r) {
    const std::int32_t j = static_cast<std::int32_t>(r % capacity), head = static_cast<std::int32_t>(r / capacity);
    positions[r] = 2 * j + (head % 3 == 0 ? 1 : 0);  // rows in position order, different per head
  }
  skip[3] = 1;
  in.key_positions = Tensor::from_ints(positions, {B, H, capacity});
  in.skip_rows = Tensor::from_ints(skip, {B, H, Tq});
  in.key_attention = Tensor::zeros({B, H, capacity}, DType::f64);
  const Tensor got = ops::cached_attention(in);
  ops::CachedAttentionInputs rep = in;
  rep.k = repeated(in.k, H / Hkv).detach();
  rep.v = repeated(in.v, H / Hkv).detach();
  rep.key_attention = Tensor::zeros({B, H, capacity}, DType::f64);
  EXPECT_TRUE(test::all_close(got, ops::cached_attention(rep), 0, 0));
  EXPECT_TRUE(test::all_close(in.key_attention, rep.key_attention, 0, 0));
  for (std::int64_t x = 0; x < d; ++x) EXPECT_EQ(got.to_vector()[static_cast<std::size_t>(3 * d + x)], 0.0);
}

TEST(GqaCachedAttention, RejectsBadHeadCounts) {
  ops::CachedAttentionInputs in;
  in.q = test::randn({1, 4, 1, 8}, 1);
  in.k = in.v = test::randn({1, 3, 5, 8}, 2);
  in.length = 3;
  EXPECT_TRUE(test::contains(test::message_of<ShapeError>([&] { ops::cached_attention(in); }),
                             "3 heads, which must divide q's 4"));
  in.k = test::randn({1, 2, 5, 8}, 3);
  in.v = test::randn({1, 4, 5, 8}, 4);
  EXPECT_TRUE(test::contains(test::message_of<ShapeError>([&] { ops::cached_attention(in); }), "v [1, 4, 5, 8]"));
  in.v = in.k;
  in.col_bias = test::randn({1, 2, 5}, 5);  // per key/value head instead of per query head
  EXPECT_TRUE(test::contains(test::message_of<ShapeError>([&] { ops::cached_attention(in); }), "expected [1, 4, 5]"));
}

}  // namespace
}  // namespace gattn
