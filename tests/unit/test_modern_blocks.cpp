// The block parts of today's LLMs (model.norm, mlp, n_kv_head, head_dim, qk_norm, rope_theta,
// rope_fraction, bias, qkv_bias, tie_embeddings, the output gate's bias: false): the keys, their
// errors, the parameter names and shapes, the whole model against a reference written as plain
// loops over doubles (no gattn op in it), f64 gradchecks, and the cached forward against the full one.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "model_test_util.h"
#include "models/gpt.h"
#include "models/kv_cache.h"
#include "models/layer_stats_io.h"
#include "models/sampling.h"
#include "ops/elementwise.h"
#include "ops/shape.h"
#include "recipes/common/run_config.h"
#include "test_util.h"

namespace gattn {
namespace {

using models::GPT;
using models::ModelConfig;

// A Llama/Qwen-shaped tiny model: RMSNorm, SwiGLU, grouped-query heads, per-head q/k norm, partial
// rotary at another base, head_dim ≠ C/H, no biases, an untied head.
ModelConfig llama_config(const std::string& gate = "none") {
  ModelConfig c;
  c.vocab_size = 7;
  c.block_size = 9;
  c.n_layer = 2;
  c.n_head = 4;
  c.n_kv_head = 4;
  c.n_embd = 8;
  c.head_dim_size = 4;  // H·d = 16 ≠ C
  c.position = models::kPositionRope;
  c.rope_theta = 500.0;
  c.rope_fraction = 0.5;  // 2 of each head's 4 dimensions rotated
  c.norm = models::kNormRms;
  c.norm_eps = 1e-6;
  c.mlp = models::kMlpSwiglu;
  c.mlp_hidden = 12;
  c.qk_norm = models::kNormRms;
  c.bias = false;
  c.tie_embeddings = false;
  c.gate.kind = gate;
  c.dtype = DType::f64;
  return c;
}

// ---- the reference: the math of docs/architecture.md written out over std::vector<double> ----

using Vec = std::vector<double>;
using Params = std::map<std::string, Vec>;

Params params_of(GPT& m) {
  Params p;
  for (auto& [name, t] : m.named_parameters()) p[name] = t.to_vector();
  return p;
}

// y [T, out] = x [T, in] · Wᵀ (+ b); W [out, in].
Vec linear(const Vec& x, std::int64_t T, std::int64_t in, const Vec& W, const Vec* b) {
  const std::int64_t out = static_cast<std::int64_t>(W.size()) / in;
  Vec y(static_cast<std::size_t>(T * out), 0.0);
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t o = 0; o < out; ++o) {
      double s = b ? (*b)[o] : 0.0;
      for (std::int64_t i = 0; i < in; ++i) s += x[t * in + i] * W[o * in + i];
      y[t * out + o] = s;
    }
  return y;
}

// Each row of width n normalised: RMSNorm (w or 1 + w) or LayerNorm (w, b).
Vec norm(const ModelConfig& c, const Vec& x, std::int64_t n, const Params& p, const std::string& name) {
  Vec y(x.size());
  const Vec& w = p.at(name + ".weight");
  for (std::size_t r = 0; r < x.size() / n; ++r) {
    double mean = 0, sq = 0;
    for (std::int64_t i = 0; i < n; ++i) mean += x[r * n + i] / n;
    for (std::int64_t i = 0; i < n; ++i) {
      const double centred = c.rms_norm() ? x[r * n + i] : x[r * n + i] - mean;
      sq += centred * centred / n;
    }
    for (std::int64_t i = 0; i < n; ++i) {
      const double centred = c.rms_norm() ? x[r * n + i] : x[r * n + i] - mean;
      const double scale = c.norm_offset ? 1.0 + w[i] : w[i];
      y[r * n + i] = centred / std::sqrt(sq + c.norm_eps) * scale + (c.rms_norm() ? 0.0 : p.at(name + ".bias")[i]);
    }
  }
  return y;
}

// Rotates the first rd dims of a head vector at position pos (rotate-half layout).
void rotate(const ModelConfig& c, double* v, std::int64_t pos) {
  const std::int64_t rd = c.rope_dims(), half = rd / 2;
  for (std::int64_t k = 0; k < half; ++k) {
    const double a = static_cast<double>(pos) * std::pow(c.rope_theta, -2.0 * static_cast<double>(k) / rd);
    const double x0 = v[k], x1 = v[k + half];
    v[k] = x0 * std::cos(a) - x1 * std::sin(a);
    v[k + half] = x1 * std::cos(a) + x0 * std::sin(a);
  }
}

double sigmoid(double z) { return 1.0 / (1.0 + std::exp(-z)); }

// The logits [T, V] of one sequence; act_max, when given, gets max |x| after each block.
Vec reference_logits(const ModelConfig& c, const Params& p, const std::vector<std::int32_t>& ids,
                     Vec* act_max = nullptr) {
  const std::int64_t T = static_cast<std::int64_t>(ids.size()), C = c.n_embd, H = c.n_head, Hkv = c.kv_heads();
  const std::int64_t d = c.head_dim(), G = H / Hkv, F = c.mlp_width();
  const auto bias = [&](const std::string& n) { return p.count(n) ? &p.at(n) : nullptr; };
  Vec x(static_cast<std::size_t>(T * C));
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t i = 0; i < C; ++i)
      x[t * C + i] = p.at("wte.weight")[ids[t] * C + i] + (c.rope() ? 0.0 : p.at("wpe.weight")[t * C + i]);
  for (std::int64_t l = 0; l < c.n_layer; ++l) {
    const std::string b = "blocks." + std::to_string(l) + ".";
    const Vec h = norm(c, x, C, p, b + "ln1");
    const Vec qkv = linear(h, T, C, p.at(b + "attn.qkv.weight"), bias(b + "attn.qkv.bias"));
    const std::int64_t W = (H + 2 * Hkv) * d;
    // Head vectors: q of head n at column n·d, k of key head g at H·d + g·d, v at (H + Hkv)·d + g·d.
    auto head = [&](std::int64_t t, std::int64_t col) {
      return Vec(qkv.begin() + t * W + col, qkv.begin() + t * W + col + d);
    };
    std::vector<Vec> q(static_cast<std::size_t>(T * H)), k(static_cast<std::size_t>(T * Hkv)), v(k.size());
    for (std::int64_t t = 0; t < T; ++t) {
      for (std::int64_t n = 0; n < H; ++n) q[t * H + n] = head(t, n * d);
      for (std::int64_t g = 0; g < Hkv; ++g) {
        k[t * Hkv + g] = head(t, (H + g) * d);
        v[t * Hkv + g] = head(t, (H + Hkv + g) * d);
      }
    }
    if (c.qk_norm != models::kQkNormNone) {
      for (Vec& e : q) e = norm(c, e, d, p, b + "attn.q_norm");
      for (Vec& e : k) e = norm(c, e, d, p, b + "attn.k_norm");
    }
    if (c.rope()) {
      for (std::int64_t t = 0; t < T; ++t) {
        for (std::int64_t n = 0; n < H; ++n) rotate(c, q[t * H + n].data(), t);
        for (std::int64_t g = 0; g < Hkv; ++g) rotate(c, k[t * Hkv + g].data(), t);
      }
    }
    Vec y(static_cast<std::size_t>(T * H * d), 0.0);
    for (std::int64_t n = 0; n < H; ++n)
      for (std::int64_t i = 0; i < T; ++i) {
        const std::int64_t g = n / G;
        Vec s(static_cast<std::size_t>(i + 1));
        double mx = -1e300, z = 0;
        for (std::int64_t j = 0; j <= i; ++j) {
          double dot = 0;
          for (std::int64_t e = 0; e < d; ++e) dot += q[i * H + n][e] * k[j * Hkv + g][e];
          s[j] = dot / std::sqrt(static_cast<double>(d));
          mx = std::max(mx, s[j]);
        }
        for (double& e : s) z += (e = std::exp(e - mx));
        for (std::int64_t j = 0; j <= i; ++j)
          for (std::int64_t e = 0; e < d; ++e) y[(i * H + n) * d + e] += s[j] / z * v[j * Hkv + g][e];
      }
    if (c.gate.kind == "output") {  // Qwen's G1: y ⊙ σ(h·Wᵀ (+ b)), elementwise
      const Vec z = linear(h, T, C, p.at(b + "attn.gate.weight"), bias(b + "attn.gate.bias"));
      for (std::size_t e = 0; e < y.size(); ++e) y[e] *= sigmoid(z[e]);
    }
    const Vec a = linear(y, T, H * d, p.at(b + "attn.proj.weight"), bias(b + "attn.proj.bias"));
    for (std::size_t e = 0; e < x.size(); ++e) x[e] += a[e];
    const Vec h2 = norm(c, x, C, p, b + "ln2");
    Vec u;
    if (c.gated_mlp()) {  // swiglu: silu(gate) ⊙ up; glu: σ(gate) ⊙ up
      const Vec gt = linear(h2, T, C, p.at(b + "mlp.gate.weight"), bias(b + "mlp.gate.bias"));
      u = linear(h2, T, C, p.at(b + "mlp.up.weight"), bias(b + "mlp.up.bias"));
      for (std::size_t e = 0; e < u.size(); ++e) u[e] *= (c.swiglu() ? gt[e] : 1.0) * sigmoid(gt[e]);
    } else {
      u = linear(h2, T, C, p.at(b + "mlp.fc.weight"), bias(b + "mlp.fc.bias"));
      for (double& e : u) e = 0.5 * e * (1 + std::tanh(std::sqrt(2 / M_PI) * (e + 0.044715 * e * e * e)));
    }
    const Vec m = linear(u, T, F, p.at(b + "mlp.proj.weight"), bias(b + "mlp.proj.bias"));
    for (std::size_t e = 0; e < x.size(); ++e) x[e] += m[e];
    if (act_max) {
      act_max->resize(static_cast<std::size_t>(c.n_layer));
      for (double e : x) (*act_max)[l] = std::max((*act_max)[l], std::abs(e));
    }
  }
  const Vec f = norm(c, x, C, p, "ln_f");
  return linear(f, T, C, p.at(c.tie_embeddings ? "wte.weight" : "lm_head.weight"), nullptr);
}

// Moves every parameter away from its start (norm weights off 1, biases off 0) so nothing hides.
void perturb_all(GPT& m, std::uint64_t seed) {
  Generator gen(seed, 3);
  for (auto& [name, p] : m.named_parameters()) {
    Tensor noise = Tensor::empty(p.shape(), p.dtype());
    gen.normal_(noise, 0.0, 0.3);
    std::vector<double> a = p.to_vector(), b = noise.to_vector();
    for (std::size_t i = 0; i < a.size(); ++i) a[i] += b[i];
    p.copy_from(Tensor::from(a, p.shape(), p.dtype()));
  }
}

void expect_matches_loops(const ModelConfig& c) {
  GPT model(c, 5);
  perturb_all(model, 9);
  model.eval();
  const std::int64_t B = 2, T = c.block_size;
  Tensor idx = test::tokens(B, T, c.vocab_size, 4);
  Tensor logits;
  {
    NoGradGuard no_grad;
    logits = model.forward(idx).logits;
  }
  const Params p = params_of(model);
  const std::vector<double> got = logits.to_vector();
  const std::vector<double> ids = idx.to_vector();
  for (std::int64_t b = 0; b < B; ++b) {
    std::vector<std::int32_t> seq;
    for (std::int64_t t = 0; t < T; ++t) seq.push_back(static_cast<std::int32_t>(ids[b * T + t]));
    const Vec want = reference_logits(c, p, seq);
    double worst = 0;
    for (std::size_t e = 0; e < want.size(); ++e) worst = std::max(worst, std::abs(got[b * want.size() + e] - want[e]));
    EXPECT_LT(worst, 1e-11) << "sequence " << b;
  }
}

TEST(ModernBlocks, ActMaxIsTheLargestResidualValueAfterEachBlock) {
  ModelConfig c = llama_config("output");
  GPT model(c, 5);
  perturb_all(model, 9);
  model.eval();
  Tensor idx = test::tokens(2, c.block_size, c.vocab_size, 4);
  models::ForwardOptions opt;
  opt.collect_stats = true;
  models::ForwardResult r;
  {
    NoGradGuard no_grad;
    r = model.forward(idx, Tensor(), opt);
  }
  const Params p = params_of(model);
  const std::vector<double> ids = idx.to_vector();
  Vec want(static_cast<std::size_t>(c.n_layer), 0.0);
  for (std::int64_t b = 0; b < 2; ++b) {
    std::vector<std::int32_t> seq;
    for (std::int64_t t = 0; t < c.block_size; ++t) seq.push_back(static_cast<std::int32_t>(ids[b * c.block_size + t]));
    Vec one;
    reference_logits(c, p, seq, &one);
    for (std::size_t l = 0; l < want.size(); ++l) want[l] = std::max(want[l], one[l]);
  }
  ASSERT_EQ(r.stats.size(), want.size());
  for (std::size_t l = 0; l < want.size(); ++l) {
    EXPECT_NEAR(r.stats[l].act_max, want[l], 1e-12) << "layer " << l;
    EXPECT_GT(r.stats[l].act_max, 0.0);
  }
  // Merged over batches it is the largest; on the metrics line the largest over layers and the list.
  std::vector<models::LayerStats> merged = r.stats;
  std::vector<models::LayerStats> other = r.stats;
  other[0].act_max = 1e6;
  models::merge_stats(merged, other);
  EXPECT_EQ(merged[0].act_max, 1e6);
  EXPECT_EQ(merged[1].act_max, r.stats[1].act_max);
  nlohmann::json line;
  models::add_stats_to_metrics(line, merged);
  EXPECT_EQ(line["act_max"].get<double>(), 1e6);
  EXPECT_EQ(line["act_max_by_layer"].size(), 2u);
}

TEST(ModernBlocks, DefaultsAreGpt2) {
  ModelConfig c;
  EXPECT_EQ(c.norm, "layernorm");
  EXPECT_EQ(c.mlp, "gelu");
  EXPECT_EQ(c.mlp_width(), 4 * c.n_embd);
  EXPECT_EQ(c.kv_heads(), c.n_head);
  EXPECT_EQ(c.head_dim(), c.n_embd / c.n_head);
  EXPECT_TRUE(c.bias);
  EXPECT_TRUE(c.tie_embeddings);
  // The SwiGLU rule: ⌈8C/3⌉ up to a multiple of 32.
  c.mlp = models::kMlpSwiglu;
  EXPECT_EQ(c.mlp_width(), 352);  // C = 128: 341.3 → 352
  c.n_embd = 96;
  EXPECT_EQ(c.mlp_width(), 256);
  c.mlp_hidden = 100;
  EXPECT_EQ(c.mlp_width(), 100);
  // The sigmoid GLU takes swiglu's width, so the two have equal parameters.
  c.mlp_hidden = 0;
  c.mlp = models::kMlpGlu;
  EXPECT_EQ(c.mlp_width(), 256);
  c.n_embd = 64;
  EXPECT_EQ(c.mlp_width(), 192);  // 170.7 → 192: 3·64·192 = 36,864 weights against gelu's 2·64·256 = 32,768
}

TEST(ModernBlocks, GluMlpHasSwiglusParametersAndFlops) {
  ModelConfig glu = llama_config(), swiglu = llama_config(), gelu = llama_config();
  glu.mlp = models::kMlpGlu;
  gelu.mlp = models::kMlpGelu;
  GPT a(glu, 0), b(swiglu, 0), g(gelu, 0);
  std::map<std::string, Shape> ga, gb;
  for (auto& [name, p] : a.named_parameters()) ga[name] = p.shape();
  for (auto& [name, p] : b.named_parameters()) gb[name] = p.shape();
  EXPECT_EQ(ga, gb);
  EXPECT_EQ(ga.at("blocks.1.mlp.gate.weight"), (Shape{12, 8}));
  EXPECT_EQ(ga.count("blocks.0.mlp.fc.weight"), 0u);
  // The same initial weights (registration order gate, up, proj) and the same FLOPs as swiglu; gelu
  // has 2·C·F of the MLP's 3·C·F.
  EXPECT_EQ(a.parameter("blocks.0.mlp.up.weight").to_vector(), b.parameter("blocks.0.mlp.up.weight").to_vector());
  EXPECT_EQ(a.flops_per_token(9), b.flops_per_token(9));
  EXPECT_NEAR(a.flops_per_token(9) - g.flops_per_token(9), 6.0 * 2 * 8 * 12, 1e-9);
  // σ(gate) ⊙ up is not silu(gate) ⊙ up.
  Tensor idx = test::tokens(1, 5, 7, 1);
  NoGradGuard no_grad;
  EXPECT_FALSE(test::all_close(a.forward(idx).logits, b.forward(idx).logits, 1e-6, 1e-6));
}

TEST(ModernBlocks, ParameterNamesAndShapes) {
  ModelConfig c = llama_config("output");
  c.n_kv_head = 2;
  c.gate.options["bias"] = false;
  GPT model(c, 0);
  std::map<std::string, Shape> got;
  for (auto& [name, p] : model.named_parameters()) got[name] = p.shape();
  std::map<std::string, Shape> want{{"wte.weight", {7, 8}}, {"ln_f.weight", {8}}, {"lm_head.weight", {7, 8}}};
  for (int l = 0; l < 2; ++l) {
    const std::string b = "blocks." + std::to_string(l) + ".";
    want[b + "ln1.weight"] = {8};
    want[b + "ln2.weight"] = {8};
    want[b + "attn.qkv.weight"] = {(4 + 2 * 2) * 4, 8};
    want[b + "attn.q_norm.weight"] = {4};
    want[b + "attn.k_norm.weight"] = {4};
    want[b + "attn.proj.weight"] = {8, 16};
    want[b + "attn.gate.weight"] = {16, 8};
    want[b + "mlp.gate.weight"] = {12, 8};
    want[b + "mlp.up.weight"] = {12, 8};
    want[b + "mlp.proj.weight"] = {8, 12};
  }
  EXPECT_EQ(got, want);
  // Qwen2: biases on q, k, v only.
  ModelConfig q2 = llama_config();
  q2.qkv_bias = true;
  GPT qwen2(q2, 0);
  EXPECT_EQ(qwen2.parameter("blocks.0.attn.qkv.bias").shape(), (Shape{48}));
  for (auto& [name, p] : qwen2.named_parameters()) {
    const bool is_bias = name.find("bias") != std::string::npos;
    EXPECT_TRUE(!is_bias || name.find("attn.qkv.bias") != std::string::npos) << name;
  }
  // The zero-centred norm starts at w = 0 (applied as 1 + w).
  ModelConfig offset = llama_config();
  offset.norm_offset = true;
  GPT zc(offset, 0);
  for (double w : zc.parameter("ln_f.weight").to_vector()) EXPECT_EQ(w, 0.0);
}

TEST(ModernBlocks, MatchesThePlainLoopReference) {
  expect_matches_loops(llama_config());
  for (std::int64_t kv : {2, 1}) {  // grouped-query and multi-query
    SCOPED_TRACE("n_kv_head " + std::to_string(kv));
    ModelConfig gqa = llama_config("output");
    gqa.n_kv_head = kv;
    expect_matches_loops(gqa);
  }
  ModelConfig g1 = llama_config("output");  // Qwen's G1: elementwise, bias-free, from the normed input
  g1.gate.options["bias"] = false;
  expect_matches_loops(g1);
  g1.gate.options["bias"] = true;
  expect_matches_loops(g1);
  ModelConfig zero_centred = llama_config("output");
  zero_centred.norm_offset = true;
  expect_matches_loops(zero_centred);
  ModelConfig qwen2 = llama_config();
  qwen2.qk_norm = models::kQkNormNone;
  qwen2.qkv_bias = true;
  qwen2.rope_fraction = 1.0;
  qwen2.head_dim_size = 0;
  qwen2.n_head = 2;
  qwen2.n_kv_head = 0;
  expect_matches_loops(qwen2);
  // GPT-2's parts through the same loops (the reference is not written for Llama only).
  ModelConfig gpt2 = llama_config();
  gpt2.norm = models::kNormLayer;
  gpt2.mlp = models::kMlpGelu;
  gpt2.mlp_hidden = 0;
  gpt2.qk_norm = models::kQkNormNone;
  gpt2.bias = true;
  gpt2.tie_embeddings = true;
  gpt2.position = models::kPositionLearned;
  gpt2.rope_theta = 10000.0;
  gpt2.rope_fraction = 1.0;
  gpt2.norm_eps = 1e-5;
  expect_matches_loops(gpt2);
  // The sigmoid GLU, in Llama's block and in GPT-2's (with biases).
  ModelConfig glu = llama_config("output");
  glu.mlp = models::kMlpGlu;
  expect_matches_loops(glu);
  gpt2.mlp = models::kMlpGlu;
  gpt2.mlp_hidden = 0;
  expect_matches_loops(gpt2);
}

// loss + every regulariser, as a training step differentiates.
Tensor objective(GPT& model, const Tensor& idx, const Tensor& targets) {
  models::ForwardOptions opt;
  opt.regularizers = {"gate_entropy", "attn_entropy"};
  models::ForwardResult r = model.forward(idx, targets, opt);
  Tensor total = r.loss;
  for (const auto& entry : r.regularizers) total = total + entry.second;
  return total;
}

TEST(ModernBlocks, WholeModelGradcheck) {
  ModelConfig c = llama_config("output");
  c.block_size = 5;
  c.n_kv_head = 2;
  c.gate.options["bias"] = false;
  c.norm_offset = true;
  GPT model(c, 3);
  perturb_all(model, 8);
  model.eval();
  Tensor idx = test::tokens(2, 5, 7, 1), targets = test::tokens(2, 5, 7, 2);
  EXPECT_TRUE(test::model_grads_ok(model, [&] { return objective(model, idx, targets); }));
  // The sigmoid GLU MLP with biases.
  c.mlp = models::kMlpGlu;
  c.bias = true;
  GPT glu(c, 4);
  perturb_all(glu, 9);
  glu.eval();
  EXPECT_TRUE(test::model_grads_ok(glu, [&] { return objective(glu, idx, targets); }));
}

// Every gate kind on the grouped-query block (the multiplicative score gate is refused there).
class ModernCached : public ::testing::TestWithParam<std::string> {};

TEST_P(ModernCached, EqualsTheFullForwardInChunks) {
  for (std::int64_t kv : {4, 2, 1}) {
    SCOPED_TRACE("n_kv_head " + std::to_string(kv));
    ModelConfig c = llama_config(GetParam());
    c.n_kv_head = kv;
    c.gate.options["windows"] = {0, 3};
    c.gate.options["top_k"] = 1;
    GPT model(c, 3);
    perturb_all(model, 11);
    model.eval();
    const std::int64_t B = 2, T = c.block_size;
    Tensor idx = test::tokens(B, T, c.vocab_size, 5), full;
    {
      NoGradGuard no_grad;
      full = model.forward(idx).logits;
    }
    models::KVCache cache(c, B);
    std::int64_t pos = 0;
    for (std::int64_t chunk : {4, 1, 2, 2}) {
      Tensor logits = model.forward_cached(ops::slice(idx, 1, pos, pos + chunk), cache);
      EXPECT_TRUE(test::all_close(logits, ops::slice(full, 1, pos, pos + chunk), 1e-11, 1e-9)) << "at " << pos;
      pos += chunk;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, ModernCached, ::testing::ValuesIn(test::all_gate_kinds()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(ModernBlocks, GroupedQueryGradcheckForEveryKind) {
  for (const std::string& kind : test::all_gate_kinds()) {
    SCOPED_TRACE(kind);
    ModelConfig c = llama_config(kind);
    c.block_size = 4;
    c.n_layer = 1;
    c.n_kv_head = 2;
    c.gate.options["windows"] = {0, 2};
    c.gate.options["top_k"] = 1;
    GPT model(c, 3);
    test::perturb_gate_parameters(model, 8);
    model.eval();
    Tensor idx = test::tokens(1, 4, 7, 1), targets = test::tokens(1, 4, 7, 2);
    EXPECT_TRUE(test::model_grads_ok(model, [&] { return objective(model, idx, targets); }));
  }
}

// The grouped model as a plain multi-head one: each key/value head's qkv rows (and k_norm is shared
// anyway) repeated for every query head of its group. The two compute the same function.
void expand_to_multi_head(GPT& gqa, GPT& mha) {
  const ModelConfig& c = gqa.config();
  const std::int64_t H = c.n_head, Hkv = c.kv_heads(), d = c.head_dim(), C = c.n_embd, G = H / Hkv;
  for (auto& [name, p] : gqa.named_parameters()) {
    if (name.find("attn.qkv.weight") == std::string::npos) {
      mha.parameter(name).copy_from(p);
      continue;
    }
    const std::vector<double> w = p.to_vector();
    std::vector<double> out(w.begin(), w.begin() + H * d * C);  // the query rows
    for (std::int64_t part : {0, 1})                            // keys, then values
      for (std::int64_t n = 0; n < H; ++n) {
        const std::int64_t row = (H + part * Hkv + n / G) * d;
        out.insert(out.end(), w.begin() + row * C, w.begin() + (row + d) * C);
      }
    mha.parameter(name).copy_from(Tensor::from(out, {3 * H * d, C}, DType::f64));
  }
}

TEST(ModernBlocks, GroupedCacheUnderABudgetKeepsGroupsTogether) {
  ModelConfig c = llama_config("forget");
  c.n_kv_head = 2;
  GPT gqa(c, 3);
  perturb_all(gqa, 4);
  gqa.eval();
  ModelConfig mc = c;
  mc.n_kv_head = 0;
  GPT mha(mc, 3);
  expand_to_multi_head(gqa, mha);
  mha.eval();
  const Tensor idx = test::tokens(2, c.block_size, c.vocab_size, 6);
  {
    NoGradGuard no_grad;
    ASSERT_TRUE(test::all_close(gqa.forward(idx).logits, mha.forward(idx).logits, 1e-12, 1e-12));
  }
  // Policies that choose by position evict the same rows from every head: the two agree.
  for (models::KVPolicy p : {models::KVPolicy::window, models::KVPolicy::sink_window}) {
    models::InferenceOptions o;
    o.policy = p;
    o.budget = 5;
    o.sinks = 2;
    models::KVCache a(c, 2, o), b(mc, 2, o);
    EXPECT_TRUE(
        test::all_close(models::forward_in_chunks(gqa, idx, a), models::forward_in_chunks(mha, idx, b), 1e-12, 1e-12))
        << models::policy_name(p);
    EXPECT_EQ(a.layers[0].k.size(1), 2);
  }
  // Policies that rank keys: a key head's rows rank by the sum over its query heads, and its query
  // heads' rows stay those of the key head (the same positions).
  for (models::KVPolicy p : {models::KVPolicy::h2o, models::KVPolicy::gate}) {
    models::InferenceOptions o;
    o.policy = p;
    o.budget = 5;
    models::KVCache cache(c, 2, o);
    models::forward_in_chunks(gqa, idx, cache);
    for (const models::LayerKVCache& layer : cache.layers) {
      const std::vector<double> pos = layer.key_positions.to_vector();  // [B, H, capacity]
      const std::int64_t cap = layer.key_positions.size(2);
      for (std::int64_t b = 0; b < 2; ++b)
        for (std::int64_t n = 0; n < c.n_head; ++n)
          for (std::int64_t j = 0; j < cache.length(); ++j)
            EXPECT_EQ(pos[(b * c.n_head + n) * cap + j], pos[(b * c.n_head + n / 2 * 2) * cap + j])
                << models::policy_name(p) << " head " << n << " row " << j;
    }
  }
}

TEST(ModernBlocks, MultiplicativeScoreGateIsRefusedWithGroupedHeads) {
  const std::string msg = test::error_of([] {
    Config::from_string("model: {n_head: 4, n_kv_head: 2, gate: {kind: score, form: multiplicative}}").model_config();
  });
  EXPECT_NE(msg.find("model.gate.form"), std::string::npos) << msg;
}

TEST(ModernBlocks, MetadataRoundTripsAndOldMetadataIsGpt2) {
  ModelConfig c = llama_config();
  c.n_kv_head = 2;
  c.norm_offset = true;
  const ModelConfig back = models::model_config_from_json(models::to_json(c));
  EXPECT_EQ(models::to_json(back), models::to_json(c));
  EXPECT_EQ(back.kv_heads(), 2);
  EXPECT_EQ(back.head_dim(), 4);
  EXPECT_FALSE(back.tie_embeddings);
  nlohmann::json old = models::to_json(ModelConfig{});
  for (const char* key : {"norm", "norm_eps", "norm_offset", "mlp", "mlp_hidden", "n_kv_head", "head_dim", "qk_norm",
                          "rope_theta", "rope_fraction", "bias", "qkv_bias", "tie_embeddings"})
    old.erase(key);
  EXPECT_EQ(models::to_json(models::model_config_from_json(old)), models::to_json(ModelConfig{}));
  nlohmann::json bad = models::to_json(c);
  bad["tie_embeddings"] = "no";
  EXPECT_NE(test::error_of([&] { models::model_config_from_json(bad); }).find("model.tie_embeddings"),
            std::string::npos);
}

// Each bad combination: exit-2 config errors naming the key, through the run config.
TEST(ModernBlocks, BadKeysNameTheKey) {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"model: {n_head: 4, n_kv_head: 3}", "model.n_kv_head"},
      {"model: {position: rope, n_embd: 32, n_head: 4, rope_fraction: 0.125}", "model.rope_fraction"},
      {"model: {position: rope, rope_fraction: 0.3}", "model.rope_fraction"},
      {"model: {rope_theta: 500000}", "model.rope_theta"},
      {"model: {norm_offset: true}", "model.norm_offset"},
      {"model: {norm: batchnorm}", "model.norm"},
      {"model: {mlp: relu}", "model.mlp"},
      {"model: {qk_norm: layernorm}", "model.qk_norm"},
      {"model: {n_embd: 30, n_head: 4}", "model.n_embd"},
      {"model: {norm_eps: 0}", "model.norm_eps"},
      {"model: {rope_fraction: 1.5}", "model.rope_fraction"},
      {"model: {gate: {kind: output, bias: false, init_bias: 1.0}}", "model.gate.bias"},
  };
  for (const auto& [yaml, key] : cases) {
    const std::string msg = test::error_of([&] { Config::from_string(yaml).model_config(); });
    EXPECT_NE(msg.find(key), std::string::npos) << yaml << " -> " << msg;
  }
  // head_dim set independently of the width is fine (Qwen3), and n_embd need not divide then.
  EXPECT_NO_THROW(Config::from_string("model: {n_embd: 30, n_head: 4, head_dim: 8}").model_config().validate());
}

}  // namespace
}  // namespace gattn
