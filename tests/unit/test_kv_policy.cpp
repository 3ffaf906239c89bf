// Generation under a KV budget, top-k keys and head skipping (models/kv_policy.h): one attention
// layer fed token by token through the cache against a brute-force reference that simulates each
// policy over positions on its own, materialises the kept set of every query and attends over it
// densely with the gates' own terms; plus the bad-input checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <set>

#include "core/autograd/grad_mode.h"
#include "models/gating/gate.h"
#include "models/kv_policy.h"
#include "models/sampling.h"
#include "ops/attention/cached_attention.h"
#include "ops/elementwise.h"
#include "ops/shape.h"
#include "test_util.h"
#include "unit/model_test_util.h"

namespace gattn {
namespace {

using models::InferenceOptions;
using models::KVPolicy;

constexpr std::int64_t kT = 14, kC = 8, kH = 2, kD = 4;

models::ModelConfig layer_config(const std::string& kind) {
  models::ModelConfig c = test::tiny_config(kind);
  c.block_size = kT;
  c.n_layer = 1;
  c.n_head = kH;
  c.n_embd = kC;
  c.vocab_size = 7;
  if (kind == "output") c.gate.options["granularity"] = "headwise";
  return c;
}

// A model of `cfg` with its gates away from their start (perturbed by `noise`), in eval mode.
std::unique_ptr<models::GPT> eval_model(const models::ModelConfig& cfg, std::uint64_t seed, std::uint64_t noise) {
  auto model = std::make_unique<models::GPT>(cfg, seed);
  test::perturb_gate_parameters(*model, noise);
  model->eval();
  return model;
}

// Everything the reference reads of one layer over the whole sequence, in eval mode: q, k, v per
// head and the gates' terms, from the layer's own projection and hooks.
struct LayerTerms {
  models::AttentionInputs in;
  ops::AttentionTerms terms;
};

LayerTerms layer_terms(models::GatedAttention& attn, const Tensor& h) {
  models::AttentionContext ctx;
  std::vector<Tensor> parts = ops::split(attn.qkv->forward(h), {kC, kC, kC}, 2);
  LayerTerms out;
  out.in = {h, models::split_heads(parts[0], kH), models::split_heads(parts[1], kH), models::split_heads(parts[2], kH)};
  for (const auto& g : attn.gates) g->add_terms(out.in, out.terms, ctx);
  return out;
}

double value(const Tensor& t, std::int64_t h, std::int64_t j) { return t.defined() ? t.at(h * kT + j) : 0.0; }

// The rows of head h query i keeps, chosen over positions as the policy says, one token at a time.
class KeptSets {
 public:
  KeptSets(const InferenceOptions& o, const LayerTerms& lt, std::int64_t h) : o_(o), lt_(lt), h_(h) {}

  // Adds position i (evicting first when full) and returns the kept positions, ascending.
  const std::vector<std::int64_t>& add(std::int64_t i) {
    if (o_.bounded() && static_cast<std::int64_t>(kept_.size()) == o_.budget) evict();
    kept_.push_back(i);
    return kept_;
  }
  void attended(std::int64_t j, double a) { received_[j] += a; }

 private:
  void evict() {
    std::int64_t gone = kept_.front();
    const auto lowest = [&](const std::vector<std::int64_t>& candidates, const std::function<double(std::int64_t)>& f) {
      std::int64_t best = candidates.front();
      for (std::int64_t j : candidates)
        if (f(j) < f(best)) best = j;  // ties: the oldest (first) stays best
      return best;
    };
    if (o_.policy == KVPolicy::sink_window) gone = kept_[static_cast<std::size_t>(o_.sinks)];
    // h2o keeps its newest budget/2, gate none unless asked.
    const std::int64_t recent = o_.recent >= 0 ? o_.recent : o_.policy == KVPolicy::h2o ? o_.budget / 2 : 0;
    const std::vector<std::int64_t> older(kept_.begin(), kept_.end() - recent);
    if (o_.policy == KVPolicy::h2o) gone = lowest(older, [&](std::int64_t j) { return received_[j]; });
    if (o_.policy == KVPolicy::gate) {
      const Tensor& rank = lt_.terms.col_bias.defined() ? lt_.terms.col_bias : lt_.terms.modulation_col;
      if (rank.defined()) gone = lowest(older, [&](std::int64_t j) { return value(rank, h_, j); });
    }
    kept_.erase(std::find(kept_.begin(), kept_.end(), gone));
  }
  InferenceOptions o_;
  const LayerTerms& lt_;
  std::int64_t h_;
  std::vector<std::int64_t> kept_;
  std::map<std::int64_t, double> received_;
};

// The layer's output [1, T, C] with every query attending densely over its kept set.
Tensor reference(models::GatedAttention& attn, const Tensor& h, const InferenceOptions& o) {
  const LayerTerms lt = layer_terms(attn, h);
  const std::vector<double> q = lt.in.q.to_vector(), k = lt.in.k.to_vector(), v = lt.in.v.to_vector();
  const ops::AttentionTerms& t = lt.terms;
  const double alpha = t.modulation_alpha.defined() ? t.modulation_alpha.item() : 0.0;
  std::vector<double> y(static_cast<std::size_t>(kH * kT * kD), 0.0);
  std::vector<double> head_gate;
  for (const auto& g : attn.gates)
    if (g->gates_whole_heads()) head_gate = g->head_gate(lt.in, models::AttentionContext()).to_vector();
  for (std::int64_t hd = 0; hd < kH; ++hd) {
    KeptSets sets(o, lt, hd);
    for (std::int64_t i = 0; i < kT; ++i) {
      const std::vector<std::int64_t>& kept = sets.add(i);
      if (!head_gate.empty() && head_gate[static_cast<std::size_t>(hd * kT + i)] < o.skip_heads_below) continue;
      std::vector<double> s;
      for (std::int64_t j : kept) {
        double dot = 0;
        for (std::int64_t c = 0; c < kD; ++c)
          dot +=
              q[static_cast<std::size_t>((hd * kT + i) * kD + c)] * k[static_cast<std::size_t>((hd * kT + j) * kD + c)];
        s.push_back(dot / std::sqrt(double(kD)) + value(t.row_bias, hd, i) + value(t.col_bias, hd, j));
      }
      double kth = -std::numeric_limits<double>::infinity();
      if (o.top_k_keys > 0 && static_cast<std::int64_t>(s.size()) > o.top_k_keys) {
        std::vector<double> sorted = s;
        std::sort(sorted.rbegin(), sorted.rend());
        kth = sorted[static_cast<std::size_t>(o.top_k_keys - 1)];
      }
      const double m = *std::max_element(s.begin(), s.end());
      double total = 0;
      for (double& x : s) total += x = x >= kth ? std::exp(x - m) : 0.0;
      for (std::size_t n = 0; n < kept.size(); ++n) {
        const std::int64_t j = kept[n];
        double a = s[n] / total;
        if (t.modulation_row.defined())
          a *= alpha / (1 + std::exp(-(value(t.modulation_row, hd, i) + value(t.modulation_col, hd, j)))) + 1 - alpha;
        sets.attended(j, a);
        for (std::int64_t c = 0; c < kD; ++c)
          y[static_cast<std::size_t>((hd * kT + i) * kD + c)] +=
              a * v[static_cast<std::size_t>((hd * kT + j) * kD + c)];
      }
    }
  }
  models::AttentionContext ctx;
  Tensor out = Tensor::from(y, {1, kH, kT, kD}, DType::f64);
  for (const auto& g : attn.gates) out = g->gate_heads(lt.in, out, ctx);
  out = models::merge_heads(out);
  for (const auto& g : attn.gates) out = g->gate_output(lt.in, out, ctx);
  return attn.proj->forward(out);
}

// The layer fed one position at a time through a cache under `o`.
Tensor incremental(models::GatedAttention& attn, const models::ModelConfig& cfg, const Tensor& h,
                   const InferenceOptions& o, models::InferenceCounters* counters = nullptr) {
  models::KVCache cache(cfg, 1, o);
  std::vector<Tensor> rows;
  for (std::int64_t i = 0; i < kT; ++i) {
    models::make_room(cache, 1);
    models::CachedStep at;
    at.row = cache.length();
    at.position = cache.position();
    at.options = &o;
    at.counters = &cache.counters;
    rows.push_back(attn.forward_cached(ops::slice(h, 1, i, i + 1), cache.layers[0], at));
    cache.advance(1);
  }
  if (counters) *counters = cache.counters;
  return ops::concat(rows, 1);
}

struct PolicyCase {
  std::string kind;
  KVPolicy policy;
  std::int64_t budget, top_k_keys = 0;
  double skip = 0;
  std::int64_t recent = -1;
};

std::string case_name(const ::testing::TestParamInfo<PolicyCase>& info) {
  const PolicyCase& c = info.param;
  return c.kind + "_" + models::policy_name(c.policy) + "_" + std::to_string(c.budget) +
         (c.top_k_keys ? "_top" + std::to_string(c.top_k_keys) : "") + (c.skip > 0 ? "_skip" : "") +
         (c.recent >= 0 ? "_recent" + std::to_string(c.recent) : "");
}

class KVPolicyVsReference : public ::testing::TestWithParam<PolicyCase> {};

TEST_P(KVPolicyVsReference, CachedLayerEqualsDenseAttentionOverTheKeptSet) {
  const PolicyCase c = GetParam();
  const models::ModelConfig cfg = layer_config(c.kind);
  const std::unique_ptr<models::GPT> owned = eval_model(cfg, 5, 9);
  models::GPT& model = *owned;
  NoGradGuard no_grad;
  models::GatedAttention& attn = *(*model.blocks)[0].attn;
  const Tensor h = test::randn({1, kT, kC}, 17);
  InferenceOptions o;
  o.policy = c.policy;
  o.budget = c.budget;
  o.sinks = 2;
  o.top_k_keys = c.top_k_keys;
  o.skip_heads_below = c.skip;
  o.recent = c.recent;
  models::InferenceCounters counters;
  const Tensor got = incremental(attn, cfg, h, o, &counters);
  EXPECT_TRUE(test::all_close(got, reference(attn, h, o), 1e-10, 1e-10));
  EXPECT_EQ(counters.head_queries, kH * kT);
  EXPECT_EQ(counters.evicted, o.bounded() ? kH * (kT - c.budget) : 0);
  if (c.skip > 0) {
    EXPECT_GT(counters.skipped, 0) << "the threshold should skip some head-queries of this layer";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Policies, KVPolicyVsReference,
    ::testing::Values(PolicyCase{"none", KVPolicy::window, 5}, PolicyCase{"score", KVPolicy::sink_window, 6},
                      PolicyCase{"none", KVPolicy::h2o, 6}, PolicyCase{"forget", KVPolicy::h2o, 5},
                      PolicyCase{"score", KVPolicy::gate, 5}, PolicyCase{"forget", KVPolicy::gate, 4},
                      PolicyCase{"pair", KVPolicy::gate, 6}, PolicyCase{"pair", KVPolicy::h2o, 7},
                      PolicyCase{"score", KVPolicy::full, 0, 3}, PolicyCase{"forget", KVPolicy::gate, 6, 2},
                      PolicyCase{"output", KVPolicy::full, 0, 0, 0.5},
                      PolicyCase{"output", KVPolicy::window, 4, 0, 0.5},
                      PolicyCase{"score", KVPolicy::gate, 6, 0, 0, 2}, PolicyCase{"none", KVPolicy::h2o, 6, 0, 0, 1}),
    case_name);

// Rows that hold scattered positions: a window counts positions, not rows. The same query over the
// whole sequence, with the missing positions masked by a -1e30 column bias, is the reference.
TEST(CachedAttentionRows, AWindowCountsPositionsNotRows) {
  const std::vector<std::int32_t> kept{0, 3, 5, 6, 8, 9};  // the newest row is the query's own
  const std::int64_t R = static_cast<std::int64_t>(kept.size()), P = 10;
  const Tensor q = test::randn({1, 1, 1, kD}, 1), k = test::randn({1, 1, P, kD}, 2), v = test::randn({1, 1, P, kD}, 3);
  std::vector<double> mask(static_cast<std::size_t>(P), -1e30), ks, vs;
  const std::vector<double> kv = k.to_vector(), vv = v.to_vector();
  for (std::int32_t p : kept) {
    mask[static_cast<std::size_t>(p)] = 0;
    for (std::int64_t c = 0; c < kD; ++c) {
      ks.push_back(kv[static_cast<std::size_t>(p * kD + c)]);
      vs.push_back(vv[static_cast<std::size_t>(p * kD + c)]);
    }
  }
  for (std::int64_t window : {0, 2, 4, 7}) {
    ops::CachedAttentionInputs rows;
    rows.q = q;
    rows.k = Tensor::from(ks, {1, 1, R, kD}, DType::f64);
    rows.v = Tensor::from(vs, {1, 1, R, kD}, DType::f64);
    rows.length = R;
    rows.window = window;
    rows.key_positions = Tensor::from_ints(kept, {1, 1, R});
    ops::CachedAttentionInputs all;
    all.q = q;
    all.k = k;
    all.v = v;
    all.length = P;
    all.window = window;
    all.col_bias = Tensor::from(mask, {1, 1, P}, DType::f64);
    EXPECT_TRUE(test::all_close(ops::cached_attention(rows), ops::cached_attention(all), 1e-12, 1e-12))
        << "window " << window;
  }
}

// A budget as large as the sequence evicts nothing: every bounded policy gives the exact cache's
// logits, and the exact cache is the full forward.
TEST(KVPolicy, AFullBudgetIsExactGeneration) {
  models::ModelConfig cfg = layer_config("forget");
  cfg.n_layer = 2;
  const std::unique_ptr<models::GPT> owned = eval_model(cfg, 2, 4);
  models::GPT& model = *owned;
  const Tensor idx = test::tokens(2, kT, cfg.vocab_size, 3);
  Tensor full;
  {
    NoGradGuard no_grad;
    full = model.forward(idx).logits;
  }
  for (KVPolicy p : {KVPolicy::window, KVPolicy::sink_window, KVPolicy::h2o, KVPolicy::gate}) {
    InferenceOptions o;
    o.policy = p;
    o.budget = kT;
    models::KVCache cache(cfg, 2, o);
    EXPECT_TRUE(test::all_close(models::forward_in_chunks(model, idx, cache), full, 1e-12, 1e-12))
        << models::policy_name(p);
  }
}

// Chunked feeding (the prompt, then one token at a time once the budget is full) is the same
// function as one token at a time.
TEST(KVPolicy, ChunkedFeedingEqualsOneTokenAtATime) {
  models::ModelConfig cfg = layer_config("score");
  cfg.n_layer = 2;
  const std::unique_ptr<models::GPT> owned = eval_model(cfg, 6, 1);
  models::GPT& model = *owned;
  const Tensor idx = test::tokens(1, kT, cfg.vocab_size, 8);
  for (KVPolicy p : {KVPolicy::h2o, KVPolicy::gate}) {
    InferenceOptions o;
    o.policy = p;
    o.budget = 6;
    models::KVCache chunked(cfg, 1, o), single(cfg, 1, o);
    const Tensor a = models::forward_in_chunks(model, idx, chunked);
    std::vector<Tensor> rows;
    for (std::int64_t i = 0; i < kT; ++i) rows.push_back(model.forward_cached(ops::slice(idx, 1, i, i + 1), single));
    EXPECT_TRUE(test::all_close(a, ops::concat(rows, 1), 1e-12, 1e-12)) << models::policy_name(p);
    EXPECT_EQ(chunked.length(), 6);
    EXPECT_EQ(chunked.position(), kT);
  }
}

TEST(KVPolicy, GenerationUnderABudgetRunsPastTheBlockAndIsSeeded) {
  models::ModelConfig cfg = layer_config("score");
  models::GPT model(cfg, 3);
  model.eval();
  InferenceOptions o;
  o.policy = KVPolicy::gate;
  o.budget = 5;
  models::InferenceCounters counters;
  const models::SamplingOptions s{1.0, 0, 4};
  const auto a = models::generate(model, {1, 2, 3}, 40, s, {}, o, &counters);
  EXPECT_EQ(a.size(), 40u);
  EXPECT_EQ(a, models::generate(model, {1, 2, 3}, 40, s, {}, o));
  EXPECT_GT(counters.evicted, 0);
}

// Rotary positions under a budget run past block_size without restarting. With one layer and no
// position table, the window's logits at position i are the full forward's over the last `budget`
// tokens alone (scores see only differences of positions).
TEST(KVPolicy, RopeUnderAWindowRunsPastTheBlock) {
  models::ModelConfig cfg = layer_config("score");
  cfg.position = models::kPositionRope;
  const std::unique_ptr<models::GPT> owned = eval_model(cfg, 8, 2);
  models::GPT& model = *owned;
  InferenceOptions o;
  o.policy = KVPolicy::window;
  o.budget = 5;
  const std::int64_t n = 3 * kT;
  const Tensor idx = test::tokens(1, n, cfg.vocab_size, 4);
  models::KVCache cache(cfg, 1, o);
  const Tensor logits = models::forward_in_chunks(model, idx, cache);
  EXPECT_EQ(cache.position(), n);
  EXPECT_EQ(cache.length(), o.budget);
  NoGradGuard no_grad;
  for (std::int64_t i = o.budget - 1; i < n; i += 7) {
    const Tensor alone = model.forward(ops::slice(idx, 1, i - o.budget + 1, i + 1)).logits;
    EXPECT_TRUE(
        test::all_close(ops::slice(logits, 1, i, i + 1), ops::slice(alone, 1, o.budget - 1, o.budget), 1e-9, 1e-9))
        << "position " << i;
  }
  // Learned positions end at block_size, whatever the budget.
  models::ModelConfig learned = layer_config("score");
  models::GPT lmodel(learned, 8);
  models::KVCache lcache(learned, 1, o);
  EXPECT_NE(test::error_of([&] {
              models::forward_in_chunks(lmodel, ops::slice(idx, 1, 0, kT + 1), lcache);
            }).find("block_size"),
            std::string::npos);
}

TEST(KVPolicy, OptionsTheModelCannotServeAreNamed) {
  const auto error = [](const std::string& kind, const InferenceOptions& o) {
    models::GPT model(layer_config(kind), 1);
    return test::error_of([&] { models::check_inference_options(o, model); });
  };
  InferenceOptions o;
  o.policy = KVPolicy::window;
  o.budget = 0;
  EXPECT_NE(error("none", o).find("--kv-budget: must be between 1 and the context"), std::string::npos);
  o.budget = kT + 1;
  EXPECT_NE(error("none", o).find("--kv-budget"), std::string::npos);
  o.budget = 4;
  o.policy = KVPolicy::gate;
  EXPECT_NE(error("none", o).find("--kv-policy gate: the model has no gate that values keys"), std::string::npos);
  EXPECT_NE(error("output", o).find("--kv-policy gate"), std::string::npos);
  EXPECT_EQ(error("forget", o), "");
  o.recent = 4;
  EXPECT_NE(error("forget", o).find("--kv-recent: the newest keys kept must be fewer than --kv-budget=4"),
            std::string::npos);
  o.recent = -1;
  o.policy = KVPolicy::sink_window;
  o.sinks = 4;
  EXPECT_NE(error("none", o).find("--kv-sinks"), std::string::npos);
  InferenceOptions skip;
  skip.skip_heads_below = 0.2;
  EXPECT_NE(error("score", skip).find("--skip-heads-below: the model has no headwise output gate"), std::string::npos);
  EXPECT_EQ(error("output", skip), "");  // layer_config makes output headwise
  models::ModelConfig elementwise = layer_config("output");
  elementwise.gate.options["granularity"] = "elementwise";
  models::GPT m(elementwise, 1);
  EXPECT_NE(test::error_of([&] { models::check_inference_options(skip, m); }).find("--skip-heads-below"),
            std::string::npos);
  skip.skip_heads_below = 1.5;
  EXPECT_NE(error("output", skip).find("must be in [0, 1]"), std::string::npos);
  EXPECT_NE(test::error_of([] { models::parse_kv_policy("lru"); }).find("--kv-policy: 'lru' is not a policy"),
            std::string::npos);
}

}  // namespace
}  // namespace gattn
