// Generation: the cached attention kernel against the fused op, GPT.forward_cached against the
// full forward for every gate kind, the token sampler, and seeded determinism of generate().
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "core/autograd/grad_mode.h"
#include "models/sampling.h"
#include "ops/attention/attention.h"
#include "ops/attention/cached_attention.h"
#include "ops/elementwise.h"
#include "ops/scan.h"
#include "ops/shape.h"
#include "test_util.h"
#include "unit/model_test_util.h"

namespace gattn {
namespace {

using std::string;
using test::all_close;

// Rows from..T−1 of a [B, H, T, ...] tensor.
Tensor last_rows(const Tensor& x, std::int64_t from) { return ops::slice(x, 2, from, x.size(2)); }

// Terms as the gates give them: a column bias log σ(f) (score), a prefix sum c as row_bias = c and
// col_bias = −c (forget), the modulation terms (pair).
struct KernelCase {
  bool col_bias, prefix_difference, modulation;
  std::int64_t window;
};

class CachedAttentionKernel : public ::testing::TestWithParam<KernelCase> {};

TEST_P(CachedAttentionKernel, MatchesFusedAttentionOnTheNewestRows) {
  const KernelCase c = GetParam();
  const std::int64_t B = 2, H = 3, T = 9, d = 4, Tq = 3;
  Tensor q = test::randn({B, H, T, d}, 1), k = test::randn({B, H, T, d}, 2), v = test::randn({B, H, T, d}, 3);
  ops::AttentionTerms terms;
  ops::CachedAttentionInputs in;
  if (c.col_bias) terms.col_bias = test::rand({B, H, T}, 4, -3, 0);
  if (c.prefix_difference) {
    const Tensor cum = ops::cumsum(test::rand({B, H, T}, 5, -1, 0), 2);
    terms.row_bias = cum;
    terms.col_bias = terms.col_bias.defined() ? terms.col_bias - cum : ops::neg(cum);
    in.row_bias = last_rows(cum, T - Tq);
  }
  in.col_bias = terms.col_bias;
  if (c.modulation) {
    terms.modulation_row = test::randn({B, H, T}, 6);
    terms.modulation_col = in.modulation_col = test::randn({B, H, T}, 7);
    terms.modulation_alpha = Tensor::from({0.7}, {1}, DType::f64);
    terms.modulation_temperature = 0.5;
    in.modulation_row = last_rows(terms.modulation_row, T - Tq);
    in.modulation_alpha = 0.7;
    in.modulation_temperature = 0.5;
  }
  ops::AttentionOptions options;
  options.window = c.window;
  in.window = c.window;
  Tensor full = ops::flash_attention(q, k, v, terms, options).out;
  // A cache larger than the sequence: rows past `length` must be ignored.
  Tensor kc = Tensor::full({B, H, T + 4, d}, 1e3, DType::f64), vc = Tensor::full({B, H, T + 4, d}, 1e3, DType::f64);
  models::write_cache_rows(kc, k, 0);
  models::write_cache_rows(vc, v, 0);
  auto pad = [&](const Tensor& t) {
    if (!t.defined()) return t;
    Tensor out = Tensor::full({B, H, T + 4}, -7.0, DType::f64);
    models::write_cache_rows(out, t, 0);
    return out;
  };
  in.col_bias = pad(in.col_bias);
  in.modulation_col = pad(in.modulation_col);
  in.q = last_rows(q, T - Tq);
  in.k = kc;
  in.v = vc;
  in.length = T;
  EXPECT_TRUE(all_close(ops::cached_attention(in), last_rows(full, T - Tq), 1e-12, 1e-10));
}

INSTANTIATE_TEST_SUITE_P(Terms, CachedAttentionKernel,
                         ::testing::Values(KernelCase{false, false, false, 0}, KernelCase{true, false, false, 0},
                                           KernelCase{false, true, false, 0}, KernelCase{false, false, true, 0},
                                           KernelCase{true, true, true, 0}, KernelCase{false, false, false, 3},
                                           KernelCase{true, false, true, 2}),
                         [](const ::testing::TestParamInfo<KernelCase>& info) {
                           const KernelCase& c = info.param;
                           return std::string(c.col_bias ? "col_bias_" : "") +
                                  (c.prefix_difference ? "prefix_difference_" : "") +
                                  (c.modulation ? "modulation_" : "") + "window" + std::to_string(c.window);
                         });

TEST(CachedAttention, RejectsBadArguments) {
  Tensor q = test::randn({1, 1, 2, 4}, 1), k = test::randn({1, 1, 5, 4}, 2);
  ops::CachedAttentionInputs in;
  in.q = q;
  in.k = in.v = k;
  in.length = 1;
  EXPECT_NE(test::error_of([&] { ops::cached_attention(in); }).find("Tq <= length"), std::string::npos);
  in.length = 6;
  EXPECT_NE(test::error_of([&] { ops::cached_attention(in); }).find("capacity"), std::string::npos);
  in.length = 3;
  in.q = q.clone().set_requires_grad(true);
  EXPECT_NE(test::error_of([&] { ops::cached_attention(in); }).find("inference only"), std::string::npos);
}

// Every gate kind (and the gumbel activation, whose eval form is σ(z/τ)): logits from the cache,
// fed in uneven chunks, equal the full forward's in eval mode.
struct ModelCase {
  std::string kind;
  std::string activation = "sigmoid";
  std::int64_t top_k = 1;
  std::string granularity = "elementwise";
};

class ForwardCached : public ::testing::TestWithParam<ModelCase> {};

TEST_P(ForwardCached, EqualsTheFullForwardPositionByPosition) {
  const ModelCase c = GetParam();
  models::ModelConfig cfg = test::tiny_config(c.kind);
  cfg.block_size = 11;
  cfg.vocab_size = 7;
  cfg.gate.activation = c.activation;
  cfg.gate.temperature = 0.6;
  cfg.gate.options["top_k"] = c.top_k;
  cfg.gate.options["granularity"] = c.granularity;
  cfg.gate.options["windows"] = {0, 3};
  models::GPT model(cfg, 3);
  test::perturb_gate_parameters(model, 11);
  model.eval();
  const std::int64_t B = 2, T = 11;
  Tensor idx = test::tokens(B, T, cfg.vocab_size, 5);
  Tensor full;
  {
    NoGradGuard no_grad;
    full = model.forward(idx).logits;  // [B, T, V]
  }
  models::KVCache cache(cfg, B);
  std::int64_t pos = 0;
  for (std::int64_t chunk : {4, 1, 1, 2, 1, 2}) {
    Tensor logits = model.forward_cached(ops::slice(idx, 1, pos, pos + chunk), cache);
    EXPECT_TRUE(all_close(logits, ops::slice(full, 1, pos, pos + chunk), 1e-11, 1e-9))
        << std::string(c.kind) << " at positions " << pos << " … " << pos + chunk - 1;
    pos += chunk;
  }
  EXPECT_EQ(cache.length(), T);
  EXPECT_NE(test::error_of([&] { model.forward_cached(ops::slice(idx, 1, 0, 1), cache); }).find("block_size"),
            std::string::npos);
  EXPECT_FALSE(model.parameter("wte.weight").grad().defined());
}

INSTANTIATE_TEST_SUITE_P(Gates, ForwardCached,
                         ::testing::Values(ModelCase{"none"}, ModelCase{"output"},
                                           ModelCase{"output", "sigmoid", 1, "headwise"}, ModelCase{"score"},
                                           ModelCase{"forget"}, ModelCase{"pair"}, ModelCase{"context"},
                                           ModelCase{"routed"}, ModelCase{"routed", "sigmoid", 2},
                                           ModelCase{"output", "gumbel_sigmoid"}, ModelCase{"pair", "gumbel_sigmoid"},
                                           ModelCase{"forget", "gumbel_sigmoid"}),
                         [](const ::testing::TestParamInfo<ModelCase>& info) {
                           const ModelCase& c = info.param;
                           return std::string(std::string(c.kind)) + "_" + c.activation + "_top" +
                                  std::to_string(c.top_k) + "_" + c.granularity;
                         });

TEST(SampleToken, GreedyAndTopOneAreTheArgmax) {
  std::vector<double> logits{0.1, 2.0, -1.0, 2.0, 0.5};
  Generator gen(1, models::kSamplingStream);
  EXPECT_EQ(models::sample_token(logits, {0.0, 0, 1}, gen), 1);  // ties: lowest id
  for (int i = 0; i < 50; ++i) {
    const std::int32_t t = models::sample_token(logits, {5.0, 1, 1}, gen);
    EXPECT_TRUE(t == 1 || t == 3);  // top-1 keeps every token tied at the top
  }
}

TEST(SampleToken, FrequenciesFollowTheTemperedSoftmaxOverTheTopK) {
  const std::vector<double> logits{std::log(1.0), std::log(2.0), std::log(4.0), std::log(0.5)};
  Generator gen(9, models::kSamplingStream);
  const int n = 40000;
  std::map<int, int> counts;
  for (int i = 0; i < n; ++i) ++counts[models::sample_token(logits, {1.0, 3, 9}, gen)];
  EXPECT_EQ(counts.count(3), 0u);  // outside the top 3
  EXPECT_NEAR(counts[0] / double(n), 1.0 / 7, 0.01);
  EXPECT_NEAR(counts[1] / double(n), 2.0 / 7, 0.01);
  EXPECT_NEAR(counts[2] / double(n), 4.0 / 7, 0.01);
  // Temperature 2 flattens: p ∝ √(1, 2, 4, 0.5).
  counts.clear();
  for (int i = 0; i < n; ++i) ++counts[models::sample_token(logits, {2.0, 0, 9}, gen)];
  const double z = 1 + std::sqrt(2.0) + 2 + std::sqrt(0.5);
  EXPECT_NEAR(counts[2] / double(n), 2 / z, 0.01);
  EXPECT_NEAR(counts[3] / double(n), std::sqrt(0.5) / z, 0.01);
}

TEST(SampleToken, RejectsBadOptions) {
  EXPECT_NE(test::error_of([] {
              models::SamplingOptions o;
              o.temperature = -1;
              models::validate(o);
            }).find("--temperature"),
            std::string::npos);
  EXPECT_NE(test::error_of([] {
              models::SamplingOptions o;
              o.top_k = -2;
              models::validate(o);
            }).find("--top-k"),
            std::string::npos);
}

models::ModelConfig sampling_config(std::string kind) {
  models::ModelConfig cfg = test::tiny_config(kind, DType::f32);
  cfg.vocab_size = 40;
  cfg.block_size = 16;
  cfg.n_embd = 8;
  return cfg;
}

// The reference: forward() over the whole context at every step, the same draws.
std::vector<std::int32_t> generate_without_cache(models::GPT& model, std::vector<std::int32_t> context, int n,
                                                 const models::SamplingOptions& options) {
  NoGradGuard no_grad;
  model.eval();
  Generator gen(options.seed, models::kSamplingStream);
  std::vector<std::int32_t> out;
  for (int k = 0; k < n; ++k) {
    Tensor logits = model.forward(Tensor::from_ints(context, {1, static_cast<std::int64_t>(context.size())})).logits;
    const std::int64_t V = logits.size(-1), last = (logits.size(1) - 1) * V;
    std::vector<double> row(static_cast<std::size_t>(V));
    for (std::int64_t v = 0; v < V; ++v) row[static_cast<std::size_t>(v)] = logits.at(last + v);
    out.push_back(models::sample_token(row, options, gen));
    context.push_back(out.back());
  }
  return out;
}

TEST(Generate, EqualsRerunningTheWholeContextWithinOneBlock) {
  for (std::string kind : {"none", "forget", "pair"}) {
    models::GPT model(sampling_config(kind), 4);
    test::perturb_gate_parameters(model, 2);
    const std::vector<std::int32_t> prompt{3, 1, 4, 1, 5};
    for (double temperature : {0.0, 1.0}) {
      models::SamplingOptions o{temperature, 0, 42};
      EXPECT_EQ(models::generate(model, prompt, 11, o), generate_without_cache(model, prompt, 11, o))
          << std::string(kind) << " temperature " << temperature;
    }
  }
}

TEST(Generate, IsDeterministicPerSeedAndRunsPastTheBlock) {
  models::GPT model(sampling_config("output"), 4);
  const std::vector<std::int32_t> prompt{7};
  models::SamplingOptions o{1.0, 10, 5};
  std::vector<std::int32_t> streamed;
  const auto a = models::generate(model, prompt, 60, o, [&](std::int32_t t) { streamed.push_back(t); });
  EXPECT_EQ(a.size(), 60u);  // more than three blocks of 16
  EXPECT_EQ(a, streamed);
  EXPECT_EQ(a, models::generate(model, prompt, 60, o));
  o.seed = 6;
  EXPECT_NE(a, models::generate(model, prompt, 60, o));
  for (std::int32_t t : a) EXPECT_TRUE(t >= 0 && t < 40);
  // A prompt longer than the block keeps its tail.
  std::vector<std::int32_t> long_prompt(40, 2);
  EXPECT_EQ(models::generate(model, long_prompt, 3, o).size(), 3u);
  EXPECT_TRUE(models::generate(model, prompt, 0, o).empty());
}

}  // namespace
}  // namespace gattn
