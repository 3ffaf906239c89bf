// framework/optim: glob matching over dotted names, the lr schedules, AdamW against a hand-computed
// step and a plain reference loop, parameter groups (first match wins, lr vs lr_scale, no-decay
// groups, config errors), gradient clipping, the gate freeze on a real GPT, and convergence.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "framework/nn/layers.h"
#include "framework/optim/adamw.h"
#include "framework/optim/glob.h"
#include "framework/optim/param_group_rules.h"
#include "framework/optim/schedule.h"
#include "model_test_util.h"
#include "models/gpt.h"
#include "ops/adamw.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "test_util.h"

namespace gattn {

using optim::AdamW;
using optim::AdamWOptions;
using optim::glob_match;
using optim::ParamGroupOptions;
using optim::ScheduleConfig;

namespace {

Tensor param(const std::vector<double>& v, DType dtype = DType::f64) {
  Tensor p = Tensor::from(v, {static_cast<std::int64_t>(v.size())}, dtype);
  p.set_requires_grad(true);
  return p;
}

void set_grad(Tensor& p, const std::vector<double>& g) { p.set_grad(Tensor::from(g, p.shape(), p.dtype())); }

ScheduleConfig constant_schedule() {
  ScheduleConfig s;
  s.kind = "constant";
  return s;
}

// The raw bytes of a tensor, for bit-identity checks.
std::vector<unsigned char> bytes_of(const Tensor& t) {
  std::vector<unsigned char> b(static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype()));
  std::memcpy(b.data(), t.raw_data(), b.size());
  return b;
}

bool bit_identical(const Tensor& a, const std::vector<unsigned char>& b) { return bytes_of(a) == b; }

// AdamW written out plainly in double, one element at a time: the oracle for the fused loop.
struct ReferenceParam {
  std::vector<double> p, m, v;
  std::int64_t t = 0;
};
void reference_step(ReferenceParam& r, const std::vector<double>& g, double lr, double wd, double b1, double b2,
                    double eps) {
  r.t += 1;
  for (std::size_t i = 0; i < r.p.size(); ++i) {
    r.p[i] -= lr * wd * r.p[i];
    r.m[i] = b1 * r.m[i] + (1 - b1) * g[i];
    r.v[i] = b2 * r.v[i] + (1 - b2) * g[i] * g[i];
    const double m_hat = r.m[i] / (1 - std::pow(b1, static_cast<double>(r.t)));
    const double v_hat = r.v[i] / (1 - std::pow(b2, static_cast<double>(r.t)));
    r.p[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
  }
}

std::vector<double> grads_for(std::size_t n, std::uint64_t seed) {
  return test::randn({static_cast<std::int64_t>(n)}, seed).to_vector();
}

}  // namespace

// ---------------------------------------------------------------- glob

TEST(Glob, StarCrossesDots) {
  EXPECT_TRUE(glob_match("*", "blocks.0.attn.gate.weight"));
  EXPECT_TRUE(glob_match("blocks.*", "blocks.0.attn.gate.weight"));
  EXPECT_TRUE(glob_match("*gate*", "blocks.0.attn.gate.weight"));
  EXPECT_TRUE(glob_match("*.attn.gate.*", "blocks.11.attn.gate.bias"));
}

TEST(Glob, GatePattern) {
  EXPECT_TRUE(glob_match("blocks.*.attn.gate.*", "blocks.0.attn.gate.weight"));
  EXPECT_TRUE(glob_match("blocks.*.attn.gate.*", "blocks.12.attn.gate.bias"));
  EXPECT_FALSE(glob_match("blocks.*.attn.gate.*", "blocks.0.attn.qkv.weight"));
  EXPECT_FALSE(glob_match("blocks.*.attn.gate.*", "blocks.0.attn.gate"));
  EXPECT_FALSE(glob_match("blocks.*.attn.gate.*", "wte.weight"));
}

TEST(Glob, SuffixAndLiterals) {
  EXPECT_TRUE(glob_match("*.bias", "blocks.0.mlp.fc.bias"));
  EXPECT_FALSE(glob_match("*.bias", "blocks.0.mlp.fc.weight"));
  EXPECT_FALSE(glob_match("*.bias", "bias"));  // the dot is literal
  EXPECT_TRUE(glob_match("wte.weight", "wte.weight"));
  EXPECT_FALSE(glob_match("wte.weight", "wte.weights"));
  EXPECT_FALSE(glob_match("wte.weight", "xwte.weight"));
}

TEST(Glob, QuestionMark) {
  EXPECT_TRUE(glob_match("blocks.?.ln1.weight", "blocks.3.ln1.weight"));
  EXPECT_FALSE(glob_match("blocks.?.ln1.weight", "blocks.10.ln1.weight"));
  EXPECT_TRUE(glob_match("blocks.??.ln1.*", "blocks.10.ln1.bias"));
  EXPECT_TRUE(glob_match("?", "."));
  EXPECT_FALSE(glob_match("?", ""));
}

TEST(Glob, EmptyPatternAndName) {
  EXPECT_TRUE(glob_match("", ""));
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_TRUE(glob_match("**", ""));
  EXPECT_FALSE(glob_match("", "a"));
  EXPECT_FALSE(glob_match("a", ""));
}

TEST(Glob, BacktracksWithoutBlowup) {
  EXPECT_TRUE(glob_match("a*b*c", "aXXbYYbZZc"));
  EXPECT_TRUE(glob_match("*ab", "aab"));
  EXPECT_FALSE(glob_match("a*b*c", "aXXbYYbZZ"));
  // Exponential for naive recursion; quadratic at worst here.
  const std::string name(20000, 'a');
  EXPECT_FALSE(glob_match("*a*a*a*a*a*a*a*a*a*a*b", name));
  EXPECT_TRUE(glob_match("*a*a*a*a*a*a*a*a*a*a*", name));
}

// ---------------------------------------------------------------- schedule

TEST(Schedule, CosineWarmupThenDecay) {
  ScheduleConfig s;
  s.kind = "cosine";
  s.lr = 1.0;
  s.min_lr = 0.1;
  s.warmup_steps = 10;
  s.max_steps = 110;
  EXPECT_DOUBLE_EQ(optim::scheduled_lr(s, 0), 0.1);  // lr·1/10
  EXPECT_DOUBLE_EQ(optim::scheduled_lr(s, 4), 0.5);
  EXPECT_DOUBLE_EQ(optim::scheduled_lr(s, 9), 1.0);      // warm-up ends at the peak
  EXPECT_DOUBLE_EQ(optim::scheduled_lr(s, 10), 1.0);     // cosine starts at the peak
  EXPECT_NEAR(optim::scheduled_lr(s, 60), 0.55, 1e-12);  // half way: the mid point of lr and min_lr
  EXPECT_NEAR(optim::scheduled_lr(s, 35), 0.1 + 0.5 * (1 + std::cos(M_PI * 0.25)) * 0.9, 1e-12);
  EXPECT_DOUBLE_EQ(optim::scheduled_lr(s, 110), 0.1);
  EXPECT_DOUBLE_EQ(optim::scheduled_lr(s, 500), 0.1);
  EXPECT_GT(optim::scheduled_lr(s, 109), 0.1);
}

TEST(Schedule, CosineWithoutWarmup) {
  ScheduleConfig s;
  s.lr = 2.0;
  s.max_steps = 4;
  EXPECT_DOUBLE_EQ(optim::scheduled_lr(s, 0), 2.0);
  EXPECT_NEAR(optim::scheduled_lr(s, 2), 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(optim::scheduled_lr(s, 4), 0.0);
}

TEST(Schedule, Constant) {
  ScheduleConfig s = constant_schedule();
  s.lr = 0.3;
  EXPECT_DOUBLE_EQ(optim::scheduled_lr(s, 0), 0.3);
  EXPECT_DOUBLE_EQ(optim::scheduled_lr(s, 1000000), 0.3);
  s.warmup_steps = 3;
  EXPECT_DOUBLE_EQ(optim::scheduled_lr(s, 0), 0.1);
  EXPECT_DOUBLE_EQ(optim::scheduled_lr(s, 2), 0.3);
  EXPECT_DOUBLE_EQ(optim::scheduled_lr(s, 3), 0.3);
}

TEST(Schedule, ValidationNamesKeys) {
  ScheduleConfig s;
  s.lr = 1.0;
  s.kind = "linear";
  EXPECT_NE(test::error_of([&] { optim::validate(s); }).find("optim.schedule.kind"), std::string::npos);
  EXPECT_THROW(optim::scheduled_lr(s, 0), ValueError);
  s.kind = "cosine";
  s.max_steps = 0;
  EXPECT_NE(test::error_of([&] { optim::validate(s); }).find("optim.schedule.max_steps"), std::string::npos);
  s.max_steps = 10;
  s.warmup_steps = -1;
  EXPECT_NE(test::error_of([&] { optim::validate(s); }).find("optim.schedule.warmup_steps"), std::string::npos);
  s.warmup_steps = 0;
  EXPECT_NO_THROW(optim::validate(s));
}

// ---------------------------------------------------------------- AdamW

TEST(AdamW, OneStepByHand) {
  Tensor p = param({1.0, -2.0, 0.5});
  AdamWOptions o;
  o.lr = 0.1;
  o.weight_decay = 0.1;
  o.schedule = constant_schedule();
  AdamW opt({{"w", p}}, o);
  set_grad(p, {0.1, -0.2, 0.3});
  opt.step(0);
  // t = 1: m = 0.1 g, v = 0.01 g², so m̂ = g and v̂ = g²; the step is lr·g/(|g| + eps) after the
  // decay p·(1 − lr·wd) = 0.99 p.
  const double eps = 1e-8;
  EXPECT_TRUE(test::all_close(
      p,
      Tensor::from({0.99 - 0.1 * 0.1 / (0.1 + eps), -1.98 + 0.1 * 0.2 / (0.2 + eps), 0.495 - 0.1 * 0.3 / (0.3 + eps)},
                   {3}, DType::f64),
      1e-14, 0));
  EXPECT_TRUE(test::all_close(opt.state("w").exp_avg, Tensor::from({0.01, -0.02, 0.03}, {3}, DType::f64), 1e-15, 0));
  EXPECT_TRUE(test::all_close(opt.state("w").exp_avg_sq, Tensor::from({1e-4, 4e-4, 9e-4}, {3}, DType::f64), 1e-15, 0));
  EXPECT_EQ(opt.state("w").t, 1);
}

// Several steps of a cosine schedule with warm-up and two groups (one with its own lr_scale and
// no weight decay) against the plain reference loop, in f64 (tight) and f32 (loose).
void expect_matches_reference(DType dtype, double atol) {
  const std::size_t n = 37;
  std::vector<double> w0 = test::randn({static_cast<std::int64_t>(n)}, 1).to_vector();
  std::vector<double> b0 = test::randn({5}, 2).to_vector();
  Tensor w = param(w0, dtype), b = param(b0, dtype);
  AdamWOptions o;
  o.lr = 0.01;
  o.beta1 = 0.8;
  o.beta2 = 0.95;
  o.eps = 1e-6;
  o.weight_decay = 0.2;
  o.schedule.kind = "cosine";
  o.schedule.warmup_steps = 2;
  o.schedule.min_lr = 0.001;
  o.schedule.max_steps = 8;
  o.groups.push_back(ParamGroupOptions{"bias", {"*.bias"}, std::nullopt, 3.0, 0.0, 0});
  AdamW opt({{"fc.weight", w}, {"fc.bias", b}}, o);
  ReferenceParam rw{w0, std::vector<double>(n), std::vector<double>(n)},
      rb{b0, std::vector<double>(5), std::vector<double>(5)};
  for (std::int64_t s = 0; s < 10; ++s) {
    std::vector<double> gw = grads_for(n, 100 + static_cast<std::uint64_t>(s)),
                        gb = grads_for(5, 200 + static_cast<std::uint64_t>(s));
    set_grad(w, gw);
    set_grad(b, gb);
    opt.step(s);
    const double lr = optim::scheduled_lr(opt.options().schedule, s);
    reference_step(rw, gw, lr, 0.2, 0.8, 0.95, 1e-6);
    reference_step(rb, gb, 3.0 * lr, 0.0, 0.8, 0.95, 1e-6);
    opt.zero_grad();
    EXPECT_FALSE(w.grad().defined());
  }
  EXPECT_TRUE(test::all_close(w, Tensor::from(rw.p, w.shape(), dtype), atol, 0));
  EXPECT_TRUE(test::all_close(b, Tensor::from(rb.p, b.shape(), dtype), atol, 0));
  EXPECT_TRUE(test::all_close(opt.state("fc.weight").exp_avg_sq, Tensor::from(rw.v, w.shape(), dtype), atol, 1e-5));
  EXPECT_EQ(opt.state("fc.bias").t, 10);
}

TEST(AdamW, MatchesReferenceLoopF64) { expect_matches_reference(DType::f64, 1e-13); }
TEST(AdamW, MatchesReferenceLoopF32) { expect_matches_reference(DType::f32, 2e-6); }

TEST(AdamW, LargeTensorIsDeterministicAndMatchesReference) {
  // Big enough for the threaded path; the result must not depend on it.
  const std::int64_t n = 1 << 17;
  std::vector<double> p0 = test::randn({n}, 5).to_vector(), g = test::randn({n}, 6).to_vector();
  Tensor p = param(p0);
  AdamWOptions o;
  o.lr = 0.01;
  o.schedule = constant_schedule();
  AdamW opt({{"p", p}}, o);
  set_grad(p, g);
  opt.step(0);
  ReferenceParam r{p0, std::vector<double>(p0.size()), std::vector<double>(p0.size())};
  reference_step(r, g, 0.01, 0.1, 0.9, 0.99, 1e-8);
  EXPECT_TRUE(test::all_close(p, Tensor::from(r.p, {n}, DType::f64), 1e-14, 0));
}

// The f32 kernel is vectorised; each lane must still round every operation once, in the order of
// ops/adamw_element.h, so it agrees bit for bit with the CUDA kernel. The oracle rounds through
// volatile floats (this file is not built with -ffp-contract=off, so plain expressions could fuse).
TEST(AdamW, VectorisedF32UpdateRoundsEveryOperationOnce) {
  const std::int64_t n = 3 * (1 << 14) + 13;  // three full blocks and a tail no vector width divides
  auto floats = [n](std::uint64_t seed, double scale, bool square) {
    std::vector<double> x = test::randn({n}, seed).to_vector();
    for (double& e : x) e = static_cast<float>(square ? scale * e * e : scale * e);
    return x;
  };
  const std::vector<double> p0 = floats(11, 1.0, false), g0 = floats(12, 1.0, false), m0 = floats(13, 0.1, false),
                            v0 = floats(14, 0.01, true);
  auto as_floats = [](const std::vector<double>& x) { return std::vector<float>(x.begin(), x.end()); };
  std::vector<float> ep = as_floats(p0), eg = as_floats(g0), em = as_floats(m0), ev = as_floats(v0);
  const adamw::Settings settings{0.9, 0.95, 1e-8};
  const adamw::ParamCoeffs coeffs{1.0 - 3e-4 * 0.1, 3e-4 / (1.0 - 0.9 * 0.9), 1.0 / std::sqrt(1.0 - 0.95 * 0.95)};
  Tensor tp = Tensor::from(p0, {n}, DType::f32), tg = Tensor::from(g0, {n}, DType::f32),
         tm = Tensor::from(m0, {n}, DType::f32), tv = Tensor::from(v0, {n}, DType::f32);
  ops::adamw_update_({{tp, tg, tm, tv, coeffs}}, settings);
  const adamw::Hyper<float> h = adamw::hyper_as<float>(settings);
  const adamw::Coeffs<float> c = adamw::coeffs_as<float>(coeffs);
  for (std::size_t i = 0; i < ep.size(); ++i) {
    volatile float a = h.beta1 * em[i], b = h.one_minus_beta1 * eg[i];
    const float mi = a + b;
    volatile float gg = h.one_minus_beta2 * eg[i], gg2 = gg * eg[i], bv = h.beta2 * ev[i];
    const float vi = bv + gg2;
    volatile float root = std::sqrt(vi), scaled = root * c.inv_sqrt_bc2;
    const float denom = scaled + h.eps;
    volatile float decayed = ep[i] * c.decay, num = c.step_size * mi, ratio = num / denom;
    ep[i] = decayed - ratio;
    em[i] = mi;
    ev[i] = vi;
  }
  EXPECT_EQ(tp.to_vector(), std::vector<double>(ep.begin(), ep.end()));
  EXPECT_EQ(tm.to_vector(), std::vector<double>(em.begin(), em.end()));
  EXPECT_EQ(tv.to_vector(), std::vector<double>(ev.begin(), ev.end()));
}

TEST(AdamW, FirstMatchingGroupWinsAndDefaultGroup) {
  std::vector<std::pair<std::string, Tensor>> ps = {{"blocks.0.attn.gate.weight", param({1})},
                                                    {"blocks.0.attn.gate.bias", param({1})},
                                                    {"blocks.0.ln1.bias", param({1})},
                                                    {"wte.weight", param({1})}};
  AdamWOptions o;
  o.groups.push_back(ParamGroupOptions{"gates", {"*.attn.gate.*"}, std::nullopt, std::nullopt, std::nullopt, 0});
  o.groups.push_back(ParamGroupOptions{"no_decay", {"*.bias", "wte.*"}, std::nullopt, std::nullopt, 0.0, 0});
  o.schedule.max_steps = 10;
  AdamW opt(ps, o);
  EXPECT_EQ(opt.group_of("blocks.0.attn.gate.weight"), "gates");
  EXPECT_EQ(opt.group_of("blocks.0.attn.gate.bias"), "gates");  // *.bias matches too, but later
  EXPECT_EQ(opt.group_of("blocks.0.ln1.bias"), "no_decay");
  EXPECT_EQ(opt.group_of("wte.weight"), "no_decay");
  EXPECT_EQ(opt.group_names(), (std::vector<std::string>{"default", "gates", "no_decay"}));
  EXPECT_THROW(opt.group_of("nope"), ValueError);
  EXPECT_THROW(opt.state("nope"), ValueError);

  // An ungrouped parameter lands in "default".
  ps.emplace_back("lm.scale", param({1}));
  AdamW opt2(ps, o);
  EXPECT_EQ(opt2.group_of("lm.scale"), "default");
}

TEST(AdamW, LrVersusLrScale) {
  AdamWOptions o;
  o.lr = 0.5;
  o.schedule.kind = "cosine";
  o.schedule.warmup_steps = 4;
  o.schedule.max_steps = 20;
  o.groups.push_back(ParamGroupOptions{"abs", {"a"}, 0.01, std::nullopt, std::nullopt, 0});  // lr replaces the schedule
  o.groups.push_back(ParamGroupOptions{"scaled", {"s"}, std::nullopt, 0.1, std::nullopt, 0});
  o.groups.push_back(ParamGroupOptions{"frozen", {"f"}, std::nullopt, std::nullopt, std::nullopt, 5});
  AdamW opt({{"a", param({1})}, {"s", param({1})}, {"d", param({1})}, {"f", param({1})}}, o);
  for (std::int64_t step : {0, 3, 10, 25}) {
    const double sched = optim::scheduled_lr(opt.options().schedule, step);
    EXPECT_DOUBLE_EQ(opt.lr_of_group("default", step), sched);
    EXPECT_DOUBLE_EQ(opt.lr_of_group("abs", step), 0.01);
    EXPECT_DOUBLE_EQ(opt.lr_of_group("scaled", step), 0.1 * sched);
    EXPECT_DOUBLE_EQ(opt.lr_of_group("frozen", step), step < 5 ? 0.0 : sched);
  }
  auto lrs = opt.current_lrs(10);
  ASSERT_EQ(lrs.size(), 4u);
  EXPECT_EQ(lrs[2].first, "scaled");
  EXPECT_DOUBLE_EQ(lrs[2].second, 0.1 * optim::scheduled_lr(opt.options().schedule, 10));
  EXPECT_THROW(opt.lr_of_group("nope", 0), ValueError);

  // The absolute rate really drives the update: with g = 1 at t = 1 the step is lr·1/(1 + eps).
  Tensor a = opt.named_parameters()[0].second;
  set_grad(a, {1.0});
  AdamWOptions o2 = o;
  o2.weight_decay = 0.0;
  o2.groups = {ParamGroupOptions{"abs", {"a"}, 0.01, std::nullopt, std::nullopt, 0}};
  AdamW opt2({{"a", a}}, o2);
  opt2.step(12);
  EXPECT_NEAR(a.item(), 1.0 - 0.01, 1e-9);
}

TEST(AdamW, PerGroupWeightDecayZero) {
  // Zero gradients isolate the decay: the Adam term is 0/(0 + eps) = 0.
  Tensor w = param({2.0}), b = param({2.0}), ln = param({2.0}), emb = param({2.0});
  AdamWOptions o;
  o.lr = 0.1;
  o.weight_decay = 0.5;
  o.schedule = constant_schedule();
  o.groups.push_back(ParamGroupOptions{"no_decay", {"*.bias", "*ln*", "wte.*"}, std::nullopt, std::nullopt, 0.0, 0});
  AdamW opt({{"fc.weight", w}, {"fc.bias", b}, {"blocks.0.ln1.weight", ln}, {"wte.weight", emb}}, o);
  for (Tensor* t : {&w, &b, &ln, &emb}) set_grad(*t, {0.0});
  opt.step(0);
  EXPECT_DOUBLE_EQ(w.item(), 2.0 * (1 - 0.1 * 0.5));
  EXPECT_DOUBLE_EQ(b.item(), 2.0);
  EXPECT_DOUBLE_EQ(ln.item(), 2.0);
  EXPECT_DOUBLE_EQ(emb.item(), 2.0);
}

TEST(AdamW, GlobMatchingNothingIsAnError) {
  AdamWOptions o;
  o.schedule.max_steps = 10;
  o.groups.push_back(ParamGroupOptions{"no_decay", {"*.bias"}, std::nullopt, std::nullopt, 0.0, 0});
  o.groups.push_back(
      ParamGroupOptions{"gates", {"*.bias", "blocks.*.attn.gatee.*"}, std::nullopt, std::nullopt, std::nullopt, 3});
  std::vector<std::pair<std::string, Tensor>> ps = {{"blocks.0.attn.gate.weight", param({1})},
                                                    {"blocks.0.fc.bias", param({1})}};
  try {
    AdamW opt(ps, o);
    FAIL() << "accepted a glob that matches nothing";
  } catch (const optim::OptimizerConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "optim.param_groups[1] (gates): glob 'blocks.*.attn.gatee.*' matches no parameter");
  }
  // A glob shadowed by an earlier group still matches a parameter: not an error.
  o.groups[1].match = {"*.bias", "blocks.*.attn.gate.*"};
  EXPECT_NO_THROW(AdamW(ps, o));
}

TEST(AdamW, BadOptionsNameTheirKeys) {
  std::vector<std::pair<std::string, Tensor>> ps = {{"w", param({1})}};
  auto error = [&](const AdamWOptions& o) { return test::error_of([&] { AdamW opt(ps, o); }); };
  AdamWOptions base;
  base.schedule.max_steps = 10;
  AdamWOptions o = base;
  o.beta2 = 1.0;
  EXPECT_NE(error(o).find("optim.betas[1]"), std::string::npos);
  o = base;
  o.grad_clip = -1;
  EXPECT_NE(error(o).find("optim.grad_clip"), std::string::npos);
  o = base;
  o.schedule.max_steps = 0;
  EXPECT_NE(error(o).find("optim.schedule.max_steps"), std::string::npos);
  o = base;
  o.groups.push_back(ParamGroupOptions{"g", {"w"}, std::nullopt, -2.0, std::nullopt, 0});
  EXPECT_NE(error(o).find("optim.param_groups[0] (g).lr_scale"), std::string::npos);
  o = base;
  o.groups.push_back(ParamGroupOptions{"g", {}, std::nullopt, std::nullopt, std::nullopt, 0});
  EXPECT_NE(error(o).find("optim.param_groups[0] (g).match: must be a non-empty list"), std::string::npos);
  o = base;  // lr and lr_scale together: one of them would be ignored
  o.groups.push_back(ParamGroupOptions{"g", {"w"}, 0.01, 7.0, std::nullopt, 0});
  EXPECT_NE(error(o).find("given together with lr"), std::string::npos);
  o = base;
  o.groups.push_back(ParamGroupOptions{"default", {"w"}, std::nullopt, std::nullopt, std::nullopt, 0});
  EXPECT_NE(error(o).find("reserved"), std::string::npos);
  EXPECT_NE(test::error_of([&] {
              AdamW opt({{"w", param({1})}, {"w", param({2})}}, base);
            }).find("twice"),
            std::string::npos);
  EXPECT_THROW(AdamW({{"i", Tensor::from_ints({1}, {1})}}, base), DTypeError);
}

TEST(AdamW, ParametersWithoutGradAreSkipped) {
  Tensor a = param({1.0, 2.0}), b = param({3.0});
  AdamWOptions o;
  o.schedule = constant_schedule();
  AdamW opt({{"a", a}, {"b", b}}, o);
  set_grad(a, {0.5, 0.5});
  const auto b_before = bytes_of(b);
  opt.step(0);
  EXPECT_TRUE(bit_identical(b, b_before));
  EXPECT_EQ(opt.state("b").t, 0);
  EXPECT_EQ(opt.state("b").exp_avg.to_vector(), std::vector<double>{0.0});
  EXPECT_EQ(opt.state("a").t, 1);
  EXPECT_NE(a.at(0), 1.0);
}

TEST(AdamW, ClipGradNormReturnsNormAndScales) {
  Tensor a = param({3.0, 0.0}), b = param({4.0}, DType::f32), c = param({1.0});
  AdamWOptions o;
  o.grad_clip = 1.0;
  o.schedule = constant_schedule();
  AdamW opt({{"a", a}, {"b", b}, {"c", c}}, o);
  set_grad(a, {3.0, 0.0});
  set_grad(b, {4.0});  // c has no grad and is ignored
  EXPECT_DOUBLE_EQ(opt.clip_grad_norm(), 5.0);
  EXPECT_TRUE(test::all_close(a.grad(), Tensor::from({0.6, 0.0}, {2}, DType::f64), 1e-15, 0));
  EXPECT_TRUE(test::all_close(b.grad(), Tensor::from({0.8}, {1}, DType::f32), 1e-7, 0));
  // Within the bound: the norm is reported and the grads are left exactly as they are.
  set_grad(a, {0.3, 0.0});
  set_grad(b, {0.4});
  EXPECT_NEAR(opt.clip_grad_norm(), 0.5, 1e-7);
  EXPECT_EQ(a.grad().to_vector(), (std::vector<double>{0.3, 0.0}));
  EXPECT_EQ(b.grad().to_vector(), (std::vector<double>{static_cast<double>(0.4f)}));
}

TEST(AdamW, ClipOffAndNonFiniteNorms) {
  Tensor a = param({1.0, 1.0});
  AdamWOptions o;
  o.grad_clip = 0.0;
  o.schedule = constant_schedule();
  AdamW off({{"a", a}}, o);
  set_grad(a, {30.0, 40.0});
  EXPECT_DOUBLE_EQ(off.clip_grad_norm(), 50.0);
  EXPECT_EQ(a.grad().to_vector(), (std::vector<double>{30.0, 40.0}));

  o.grad_clip = 1.0;
  AdamW on({{"a", a}}, o);
  set_grad(a, {std::numeric_limits<double>::quiet_NaN(), 1.0});
  EXPECT_TRUE(std::isnan(on.clip_grad_norm()));
  set_grad(a, {std::numeric_limits<double>::infinity(), 1.0});
  EXPECT_TRUE(std::isinf(on.clip_grad_norm()));
  EXPECT_EQ(a.grad().at(1), 1.0);  // left for the caller's bad-step guard
  AdamW none({{"a", param({1.0})}}, o);
  EXPECT_EQ(none.clip_grad_norm(), 0.0);
}

// The NaN guard's culprit: the first parameter in order whose grad holds a NaN or an Inf, f32 or f64;
// parameters without a grad are passed over.
TEST(AdamW, FirstNonFiniteGradNamesTheParameter) {
  Tensor a = param({1.0, 2.0}), b = param({1.0, 2.0, 3.0}, DType::f32), c = param({1.0}), d = param({0.0});
  AdamWOptions o;
  o.schedule = constant_schedule();
  AdamW opt({{"a", a}, {"b", b}, {"c", c}, {"d", d}}, o);
  EXPECT_EQ(opt.first_non_finite_grad(), "");  // no grads at all
  set_grad(a, {1.0, 2.0});
  set_grad(c, {std::numeric_limits<double>::infinity()});
  set_grad(d, {std::numeric_limits<double>::quiet_NaN()});
  EXPECT_EQ(opt.first_non_finite_grad(), "c");  // b has no grad
  set_grad(b, {0.0, 0.0, std::numeric_limits<double>::quiet_NaN()});
  EXPECT_EQ(opt.first_non_finite_grad(), "b");
  opt.zero_grad();
  set_grad(a, {-std::numeric_limits<double>::infinity(), 0.0});
  EXPECT_EQ(opt.first_non_finite_grad(), "a");
  set_grad(a, {1e308, -1e308});
  set_grad(b, {3e38, -3e38, 0.0});
  EXPECT_EQ(opt.first_non_finite_grad(), "");  // large but finite
}

TEST(AdamW, ClipNormMatchesAcrossBlocks) {
  // Several norm blocks in one tensor plus a second tensor: the sum of squares over all elements.
  const std::int64_t n = 100000;
  std::vector<double> g = test::randn({n}, 9).to_vector();
  Tensor p = param(std::vector<double>(static_cast<std::size_t>(n), 0.0)), q = param({0.0});
  AdamWOptions o;
  o.grad_clip = 0.0;
  o.schedule = constant_schedule();
  AdamW opt({{"p", p}, {"q", q}}, o);
  set_grad(p, g);
  set_grad(q, {2.0});
  double s = 4.0;
  for (double x : g) s += x * x;
  EXPECT_NEAR(opt.clip_grad_norm(), std::sqrt(s), 1e-9 * std::sqrt(s));
  const double first = opt.clip_grad_norm();
  EXPECT_EQ(opt.clip_grad_norm(), first);  // deterministic to the bit
}

// ---------------------------------------------------------------- with a model

// freeze_steps (docs/config.md) on a real GPT with output gates: for steps 0, 1, 2 the gate parameters,
// their moments and step counts stay bit-identical while every other parameter moves; at step 3
// the gates start training.
TEST(OptimFreeze, GateGroupFrozenForFreezeSteps) {
  models::ModelConfig c;
  c.vocab_size = 16;
  c.block_size = 8;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 16;
  c.gate.kind = "output";
  c.dtype = DType::f32;
  models::GPT model(c, 11);

  AdamWOptions o;
  o.lr = 1e-2;
  o.schedule.kind = "cosine";
  o.schedule.warmup_steps = 2;
  o.schedule.max_steps = 5;
  o.groups.push_back(ParamGroupOptions{"gates", {"*.attn.gate.*"}, std::nullopt, std::nullopt, std::nullopt, 3});
  AdamW opt(model.named_parameters(), o);

  std::vector<std::string> gates, others;
  std::vector<std::vector<unsigned char>> initial;
  for (const auto& [name, p] : opt.named_parameters()) {
    (opt.group_of(name) == "gates" ? gates : others).push_back(name);
    initial.push_back(bytes_of(p));
  }
  ASSERT_GE(gates.size(), 2u);  // a weight and a bias per layer
  ASSERT_FALSE(others.empty());

  for (std::int64_t s = 0; s < 5; ++s) {
    opt.zero_grad();
    Tensor idx = test::tokens(2, 8, 16, 100 + static_cast<std::uint64_t>(s));
    Tensor targets = test::tokens(2, 8, 16, 200 + static_cast<std::uint64_t>(s));
    model.forward(idx, targets).loss.backward();
    ASSERT_TRUE(model.parameter(gates[0]).grad().defined());  // frozen still means gradients flow
    EXPECT_TRUE(std::isfinite(opt.clip_grad_norm()));
    opt.step(s);
    std::size_t i = 0;
    for (const auto& [name, p] : opt.named_parameters()) {
      const bool is_gate = opt.group_of(name) == "gates";
      const optim::ParamState& st = opt.state(name);
      if (is_gate && s < 3) {
        EXPECT_TRUE(bit_identical(p, initial[i])) << name << " moved at step " << s;
        EXPECT_EQ(st.t, 0) << name;
        EXPECT_TRUE(bytes_of(st.exp_avg) == std::vector<unsigned char>(bytes_of(st.exp_avg).size(), 0)) << name;
        EXPECT_TRUE(bytes_of(st.exp_avg_sq) == std::vector<unsigned char>(bytes_of(st.exp_avg_sq).size(), 0)) << name;
      } else if (is_gate) {
        EXPECT_FALSE(bit_identical(p, initial[i])) << name << " did not move at step " << s;
        EXPECT_EQ(st.t, s - 2) << name;
      } else {
        EXPECT_EQ(st.t, s + 1) << name;
        if (s == 0) {
          EXPECT_FALSE(bit_identical(p, initial[i])) << name << " did not move at step 0";
        }
      }
      ++i;
    }
  }
}

// A few hundred AdamW steps fit a small linear regression.
TEST(OptimConverge, LinearRegression) {
  Generator g(4);
  nn::Linear fc(4, 1, g, nn::LinearOptions{true, 0.5});
  Tensor x = test::randn({64, 4}, 21, 1.0, DType::f32);
  std::vector<double> xs = x.to_vector(), ys;
  const double w_true[4] = {1.5, -2.0, 0.25, 0.75};
  for (int r = 0; r < 64; ++r) {
    double y = 0.3;
    for (int k = 0; k < 4; ++k) y += w_true[k] * xs[static_cast<std::size_t>(r * 4 + k)];
    ys.push_back(y);
  }
  Tensor y = Tensor::from(ys, {64, 1}, DType::f32);
  AdamWOptions o;
  o.lr = 0.05;
  o.weight_decay = 0.0;
  o.schedule.kind = "cosine";
  o.schedule.warmup_steps = 10;
  o.schedule.max_steps = 400;
  AdamW opt(fc.named_parameters(), o);
  auto loss_of = [&] {
    Tensor d = fc.forward(x) - y;
    return ops::mean(d * d);
  };
  const double initial = loss_of().item();
  for (std::int64_t s = 0; s < 400; ++s) {
    opt.zero_grad();
    loss_of().backward();
    opt.clip_grad_norm();
    opt.step(s);
  }
  const double final_loss = loss_of().item();
  EXPECT_GT(initial, 0.5);
  EXPECT_LT(final_loss, 1e-4) << "initial " << initial;
  EXPECT_NEAR(fc.weight.at(1), -2.0, 1e-2);
  EXPECT_NEAR(fc.bias.at(0), 0.3, 1e-2);
}

}  // namespace gattn

namespace gattn {

// One set of rules for a parameter group, whether it comes from a config file or from code.
TEST(ParamGroupRules, TheSameBoundsForTheConfigAndAdamW) {
  optim::ParamGroupOptions g;
  g.name = "gates";
  g.match = {"*.attn.gate.*"};
  EXPECT_FALSE(optim::param_group_problem(g).has_value());
  auto problem_of = [&](auto change) {
    optim::ParamGroupOptions h = g;
    change(h);
    auto p = optim::param_group_problem(h);
    return p ? p->field + " " + p->message : std::string();
  };
  EXPECT_EQ(problem_of([](auto& h) { h.lr = 0.0; }), "lr must be a finite number > 0, got 0");
  EXPECT_EQ(problem_of([](auto& h) { h.lr_scale = -1.0; }), "lr_scale must be a finite number > 0, got -1");
  EXPECT_NE(problem_of([](auto& h) { h.lr = 1e-3, h.lr_scale = 2.0; }).find("given together with lr"),
            std::string::npos);
  EXPECT_EQ(problem_of([](auto& h) { h.weight_decay = -0.1; }), "weight_decay must be a finite number >= 0, got -0.1");
  EXPECT_EQ(problem_of([](auto& h) { h.freeze_steps = -2; }), "freeze_steps must be >= 0, got -2");
  EXPECT_EQ(problem_of([](auto& h) { h.match.clear(); }), "match must be a non-empty list of parameter-name globs");
  // AdamW refuses a group built in code by the same rule, naming the group.
  Tensor w = Tensor::zeros({2});
  optim::AdamWOptions o;
  o.schedule.kind = "constant";
  optim::ParamGroupOptions bad = g;
  bad.match = {"w"};
  bad.lr_scale = 0.0;
  o.groups = {bad};
  try {
    optim::AdamW adamw({{"w", w}}, o);
    ADD_FAILURE() << "lr_scale 0 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("optim.param_groups[0] (gates).lr_scale: must be a finite number > 0"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace gattn
