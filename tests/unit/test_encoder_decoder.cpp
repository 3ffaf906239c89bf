// The encoder–decoder model (model.arch encoder_decoder): parameter names, whole-model gradchecks for
// every cross gate (and gates on the encoder), cached decoding against full forwards, the source's
// padding, the config's errors and the metadata round trip.
#include <gtest/gtest.h>

#include <set>

#include "framework/data/seq2seq_tokens.h"
#include "model_test_util.h"
#include "models/sampling.h"
#include "ops/shape.h"

namespace gattn {
namespace {

using models::GateConfig;
using models::ModelConfig;

// V=7 (3 reserved ids and 4 content ids), block 6, 2 decoder blocks, 1 encoder block, 2 heads of 2.
ModelConfig seq2seq_config(DType dtype = DType::f64) {
  ModelConfig c;
  c.vocab_size = 7;
  c.block_size = 6;
  c.n_layer = 2;
  c.n_encoder_layer = 1;
  c.n_head = 2;
  c.n_embd = 4;
  c.arch = models::kArchEncoderDecoder;
  c.dtype = dtype;
  return c;
}

GateConfig gate_at(const std::string& kind, const std::string& site, std::size_t index) {
  GateConfig g;
  g.kind = kind;
  g.site = site;
  g.where = "model.gates[" + std::to_string(index) + "]";
  return g;
}

// Moves every gate parameter (any site) away from its neutral start.
void perturb_gates(models::GPT& m, std::uint64_t seed) {
  Generator gen(seed, 3);
  for (auto& [name, p] : m.named_parameters())
    if (name.find(".gate.") != std::string::npos) {
      Tensor noise = Tensor::empty(p.shape(), p.dtype());
      gen.normal_(noise, 0.0, 0.8);
      std::vector<double> a = p.to_vector(), b = noise.to_vector();
      for (std::size_t i = 0; i < a.size(); ++i) a[i] += b[i];
      p.copy_from(Tensor::from(a, p.shape(), p.dtype()));
    }
}

// Sources of B rows: row b holds `lengths[b]` content ids, then padding.
Tensor sources(const std::vector<std::int64_t>& lengths, std::int64_t S, std::uint64_t seed) {
  Generator g(seed, 5);
  std::vector<std::int32_t> ids;
  for (std::int64_t len : lengths)
    for (std::int64_t j = 0; j < S; ++j) {
      Tensor u = Tensor::empty({1}, DType::i32);
      g.randint_(u, 4);
      ids.push_back(j < len ? kSeq2SeqFirstContent + u.data<std::int32_t>()[0] : kSeq2SeqPad);
    }
  return Tensor::from_ints(ids, {static_cast<std::int64_t>(lengths.size()), S});
}

// Decoder inputs (start, then content) and their targets (content, then end).
struct Targets {
  Tensor x, y;
};
Targets targets(std::int64_t B, std::int64_t T, std::uint64_t seed) {
  Generator g(seed, 6);
  std::vector<std::int32_t> x, y;
  for (std::int64_t b = 0; b < B; ++b) {
    std::vector<std::int32_t> content;
    for (std::int64_t t = 0; t + 1 < T; ++t) {
      Tensor u = Tensor::empty({1}, DType::i32);
      g.randint_(u, 4);
      content.push_back(kSeq2SeqFirstContent + u.data<std::int32_t>()[0]);
    }
    x.push_back(kSeq2SeqStart);
    x.insert(x.end(), content.begin(), content.end());
    y.insert(y.end(), content.begin(), content.end());
    y.push_back(kSeq2SeqEnd);
  }
  return {Tensor::from_ints(x, {B, T}), Tensor::from_ints(y, {B, T})};
}

std::set<std::string> parameter_names(models::GPT& m) {
  std::set<std::string> names;
  for (auto& [name, p] : m.named_parameters()) names.insert(name);
  return names;
}

TEST(EncoderDecoder, ParameterNames) {
  ModelConfig c = seq2seq_config();
  models::GPT m(c, 1);
  const std::set<std::string> names = parameter_names(m);
  for (const char* expected :
       {"wte.weight", "wpe.weight", "encoder.blocks.0.ln1.weight", "encoder.blocks.0.attn.qkv.weight",
        "encoder.blocks.0.attn.proj.bias", "encoder.blocks.0.mlp.fc.weight", "encoder.ln_f.weight",
        "blocks.1.attn.qkv.weight", "blocks.1.ln_cross.weight", "blocks.1.cross.q.weight", "blocks.1.cross.kv.weight",
        "blocks.1.cross.proj.weight", "blocks.1.ln2.bias", "ln_f.weight"})
    EXPECT_TRUE(names.count(expected)) << expected;
  EXPECT_FALSE(names.count("encoder.blocks.1.ln1.weight"));  // n_encoder_layer 1
  EXPECT_EQ(m.parameter("blocks.0.cross.kv.weight").shape(), (Shape{8, 4}));
  // The decoder blocks hold the decoder-only names unchanged: the same GPT names plus the cross ones.
  ModelConfig d = c;
  d.arch = models::kArchDecoder;
  d.n_encoder_layer = 0;
  models::GPT decoder(d, 1);
  for (const std::string& name : parameter_names(decoder)) EXPECT_TRUE(names.count(name)) << name;
}

TEST(EncoderDecoder, GateParameterNamesPerSite) {
  ModelConfig c = seq2seq_config();
  c.gates = {gate_at("context", models::kSiteCross, 0), gate_at("score", models::kSiteCross, 1),
             gate_at("output", models::kSiteEncoder, 2), gate_at("output", models::kSiteSelf, 3)};
  c.gates[0].layers = {1};
  c.gates[0].all_layers = false;
  models::GPT m(c, 1);
  const std::set<std::string> names = parameter_names(m);
  // Block 1 has two cross gates (under cross.gate.<kind>.), block 0 one (under cross.gate.).
  EXPECT_TRUE(names.count("blocks.1.cross.gate.context.weight"));
  EXPECT_TRUE(names.count("blocks.1.cross.gate.score.weight"));
  EXPECT_TRUE(names.count("blocks.0.cross.gate.weight"));
  EXPECT_TRUE(names.count("encoder.blocks.0.attn.gate.weight"));
  EXPECT_TRUE(names.count("blocks.0.attn.gate.weight"));
  // The context gate on the cross-attention is at model width: W [C, 2C].
  EXPECT_EQ(m.parameter("blocks.1.cross.gate.context.weight").shape(), (Shape{4, 8}));
  EXPECT_EQ(models::gate_parameter_prefix(c, 1, "context", models::kSiteCross), "blocks.1.cross.gate.context.");
  EXPECT_EQ(models::gate_parameter_prefix(c, 0, "score", models::kSiteCross), "blocks.0.cross.gate.");
  EXPECT_EQ(models::gate_parameter_prefix(c, 0, "output", models::kSiteEncoder), "encoder.blocks.0.attn.gate.");
  // The registry's parameter list agrees with what the model registers.
  for (const GateConfig& g : c.gates)
    for (std::int64_t l = 0; l < c.site_layers(g.site); ++l) {
      if (!g.applies_to(l)) continue;
      for (const models::GateParameterSpec& p : models::gate_kind(g.kind).parameters(c, g))
        EXPECT_EQ(m.parameter(models::gate_parameter_prefix(c, l, g.kind, g.site) + p.name).shape(), p.shape)
            << g.kind << " at " << g.site;
    }
}

// The whole encoder–decoder's gradient for every parameter, with a padded source so the padding
// bias is in the cross-attention and the encoder.
::testing::AssertionResult grads_ok(const ModelConfig& c) {
  models::GPT m(c, 3);
  perturb_gates(m, 4);
  const Tensor src = sources({5, 3}, 5, 11);
  const Targets t = targets(2, 4, 12);
  models::ForwardOptions fo;
  fo.source = src;
  return test::model_grads_ok(m, [&] { return m.forward(t.x, t.y, fo).loss; });
}

TEST(EncoderDecoderGradcheck, Baseline) { EXPECT_TRUE(grads_ok(seq2seq_config())); }

TEST(EncoderDecoderGradcheck, EveryCrossGate) {
  for (const char* kind : {"input", "output", "score", "context"}) {
    ModelConfig c = seq2seq_config();
    c.gates = {gate_at(kind, models::kSiteCross, 0)};
    EXPECT_TRUE(grads_ok(c)) << kind;
  }
}

TEST(EncoderDecoderGradcheck, CrossGateOptions) {
  ModelConfig c = seq2seq_config();
  c.gates = {gate_at("context", models::kSiteCross, 0), gate_at("output", models::kSiteCross, 1)};
  c.gates[0].options["granularity"] = "headwise";
  c.gates[1].options["granularity"] = "headwise";
  EXPECT_TRUE(grads_ok(c)) << "headwise context and output";
  c.gates = {gate_at("context", models::kSiteCross, 0)};
  c.gates[0].activation = "tanh_magnitude";
  c.gates[0].options["input_norm"] = true;
  EXPECT_TRUE(grads_ok(c)) << "context with tanh_magnitude and input_norm";
}

TEST(EncoderDecoderGradcheck, GatesOnEverySite) {
  ModelConfig c = seq2seq_config();
  c.gates = {gate_at("input", models::kSiteCross, 0),   gate_at("score", models::kSiteCross, 1),
             gate_at("output", models::kSiteCross, 2),  gate_at("context", models::kSiteCross, 3),
             gate_at("score", models::kSiteEncoder, 4), gate_at("context", models::kSiteEncoder, 5),
             gate_at("output", models::kSiteSelf, 6)};
  EXPECT_TRUE(grads_ok(c));
}

// Decoding with the KV cache and the source's memory computed once gives the logits of the full
// forward, position by position, with gates on every site and a padded batch; with GPT-2's parts and
// with Llama's (RMSNorm, SwiGLU, rope, q/k norm, no biases, and one key/value head for the two query
// heads of every attention, the cross-attention's among them).
class CachedDecoding : public ::testing::TestWithParam<bool> {};

TEST_P(CachedDecoding, EqualsFullForward) {
  ModelConfig c = seq2seq_config();
  if (GetParam()) {
    c.n_kv_head = 1;
    c.norm = models::kNormRms;
    c.mlp = models::kMlpSwiglu;
    c.qk_norm = models::kNormRms;
    c.position = models::kPositionRope;
    c.bias = false;
  }
  c.gates = {gate_at("input", models::kSiteCross, 0),   gate_at("score", models::kSiteCross, 1),
             gate_at("output", models::kSiteCross, 2),  gate_at("context", models::kSiteCross, 3),
             gate_at("score", models::kSiteEncoder, 4), gate_at("output", models::kSiteSelf, 5)};
  models::GPT m(c, 5);
  perturb_gates(m, 6);
  m.eval();
  const Tensor src = sources({5, 2}, 5, 21);
  const Targets t = targets(2, 6, 22);
  models::ForwardOptions fo;
  fo.source = src;
  const std::vector<double> full = m.forward(t.x, Tensor(), fo).logits.to_vector();  // [2, 6, 7]
  models::KVCache cache(c, 2);
  m.encode_source(src, cache);
  for (std::int64_t pos = 0; pos < 6; ++pos) {
    const std::vector<double> step = m.forward_cached(ops::slice(t.x, 1, pos, pos + 1), cache).to_vector();  // [2,1,7]
    for (std::int64_t b = 0; b < 2; ++b)
      for (std::int64_t v = 0; v < 7; ++v)
        EXPECT_NEAR(step[static_cast<std::size_t>(b * 7 + v)], full[static_cast<std::size_t>((b * 6 + pos) * 7 + v)],
                    1e-12)
            << "b " << b << " position " << pos;
  }
}

INSTANTIATE_TEST_SUITE_P(EncoderDecoder, CachedDecoding, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "Llama" : "Gpt2"; });

// Padding after a source's end changes nothing: the encoder and the cross-attention mask it.
TEST(EncoderDecoder, SourcePaddingIsMasked) {
  ModelConfig c = seq2seq_config();
  c.gates = {gate_at("score", models::kSiteCross, 0), gate_at("score", models::kSiteEncoder, 1)};
  models::GPT m(c, 7);
  perturb_gates(m, 8);
  m.eval();
  const Tensor padded = sources({3}, 6, 31);
  const Tensor bare = ops::slice(padded, 1, 0, 3);
  const Targets t = targets(1, 4, 32);
  models::ForwardOptions with_pad, without;
  with_pad.source = padded;
  without.source = bare;
  const std::vector<double> a = m.forward(t.x, Tensor(), with_pad).logits.to_vector();
  const std::vector<double> b = m.forward(t.x, Tensor(), without).logits.to_vector();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-12) << i;
}

// Greedy generate_target is the argmax of a full forward over the target so far, step by step.
TEST(EncoderDecoder, GreedyTargetEqualsFullForwards) {
  ModelConfig c = seq2seq_config();
  c.gates = {gate_at("context", models::kSiteCross, 0)};
  models::GPT m(c, 9);
  perturb_gates(m, 10);
  m.eval();
  const std::vector<std::int32_t> source = {3, 5, 4, 6};
  models::SamplingOptions greedy;
  greedy.temperature = 0;
  const std::vector<std::int32_t> out = models::generate_target(m, source, 6, greedy);
  std::vector<std::int32_t> expected, x = {kSeq2SeqStart};
  models::ForwardOptions fo;
  fo.source = Tensor::from_ints(source, {1, 4});
  while (static_cast<std::int64_t>(x.size()) <= c.block_size && expected.size() < 6) {
    const Tensor logits =
        m.forward(Tensor::from_ints(x, {1, static_cast<std::int64_t>(x.size())}), Tensor(), fo).logits;
    const std::vector<double> row = ops::slice(logits, 1, logits.size(1) - 1, logits.size(1)).to_vector();
    const auto next = static_cast<std::int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
    if (next == kSeq2SeqEnd) break;
    expected.push_back(next);
    x.push_back(next);
  }
  EXPECT_EQ(out, expected);
}

TEST(EncoderDecoder, StatisticsPerSite) {
  ModelConfig c = seq2seq_config();
  c.gates = {gate_at("context", models::kSiteCross, 0), gate_at("score", models::kSiteEncoder, 1)};
  models::GPT m(c, 11);
  m.eval();
  models::ForwardOptions fo;
  fo.source = sources({4, 2}, 4, 41);
  fo.collect_stats = true;
  const Targets t = targets(2, 5, 42);
  const models::ForwardResult r = m.forward(t.x, t.y, fo);
  ASSERT_EQ(r.stats.size(), 2u);
  ASSERT_EQ(r.cross_stats.size(), 2u);
  ASSERT_EQ(r.encoder_stats.size(), 1u);
  // Cross rows: every query (2·5 per head) over its source; the entropy of a row of n visible keys is
  // at most ln n, so the shorter source's rows stay below ln 4.
  EXPECT_EQ(r.cross_stats[0].attention.entropy_count, 2 * 2 * 5);
  EXPECT_GT(r.cross_stats[0].attn_entropy(), 0.0);
  EXPECT_LE(r.cross_stats[0].attn_entropy(), std::log(4.0) + 1e-9);
  // The context gate's values (C per target position) count in the cross stats and the block's pool.
  EXPECT_EQ(r.cross_stats[1].gate.count, 2 * 5 * 4);
  EXPECT_EQ(r.stats[1].gate.count, 2 * 5 * 4);
  // The encoder's score gate: one value per source position and head.
  EXPECT_EQ(r.encoder_stats[0].gate.count, 2 * 4 * 2);
  EXPECT_EQ(r.encoder_stats[0].attention.entropy_count, 2 * 2 * 4);
}

TEST(EncoderDecoder, MetadataRoundTrip) {
  ModelConfig c = seq2seq_config(DType::f32);
  c.gates = {gate_at("context", models::kSiteCross, 0), gate_at("score", models::kSiteEncoder, 1)};
  const nlohmann::json j = models::to_json(c);
  EXPECT_EQ(j.at("arch"), "encoder_decoder");
  EXPECT_EQ(j.at("n_encoder_layer"), 1);
  EXPECT_EQ(j.at("gates")[0].at("where"), "cross");
  const ModelConfig back = models::model_config_from_json(j);
  EXPECT_TRUE(back.encoder_decoder());
  EXPECT_EQ(back.encoder_layers(), 1);
  ASSERT_EQ(back.gates.size(), 2u);
  EXPECT_EQ(back.gates[0].site, models::kSiteCross);
  EXPECT_EQ(back.gates[1].site, models::kSiteEncoder);
  // Metadata from before encoder–decoder models (no arch, n_encoder_layer or where) reads as a decoder.
  ModelConfig d = seq2seq_config(DType::f32);
  d.arch = models::kArchDecoder;
  d.n_encoder_layer = 0;
  d.gate = gate_at("output", models::kSiteSelf, 0);
  d.gate.where = "model.gate";
  nlohmann::json old = models::to_json(d);
  old.erase("arch");
  old.erase("n_encoder_layer");
  old["gate"].erase("where");
  const ModelConfig read = models::model_config_from_json(old);
  EXPECT_FALSE(read.encoder_decoder());
  EXPECT_EQ(read.gate.site, models::kSiteSelf);
  EXPECT_EQ(models::to_json(read), models::to_json(d));
}

void expect_config_error(const ModelConfig& c, const std::string& fragment) {
  try {
    c.validate();
    ADD_FAILURE() << "expected an error containing: " << fragment;
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(EncoderDecoder, ConfigErrors) {
  ModelConfig decoder = seq2seq_config();
  decoder.arch = models::kArchDecoder;
  decoder.n_encoder_layer = 0;
  ModelConfig c = decoder;
  c.gates = {gate_at("context", models::kSiteCross, 0)};
  expect_config_error(c, "model.gates[0].where: 'cross' needs model.arch encoder_decoder");
  c = decoder;
  c.n_encoder_layer = 2;
  expect_config_error(c, "model.n_encoder_layer: means nothing for model.arch decoder");
  c = seq2seq_config();
  c.arch = "transformer";
  expect_config_error(c, "model.arch: must be decoder or encoder_decoder");
  c = seq2seq_config();
  c.gates = {gate_at("forget", models::kSiteCross, 0)};
  expect_config_error(c, "model.gates[0].where: gate kind 'forget' cannot gate the cross attention");
  c.gates = {gate_at("routed", models::kSiteEncoder, 0)};
  expect_config_error(c, "cannot gate the encoder attention");
  c.gates = {gate_at("score", models::kSiteCross, 0)};
  c.gates[0].options["form"] = "multiplicative";
  expect_config_error(c, "model.gates[0].form: a cross-attention score gate is additive only");
  c.gates = {gate_at("context", models::kSiteCross, 0)};
  c.gates[0].options["heads"] = {0};
  c.gates[0].set_keys = {"heads"};
  expect_config_error(c, "model.gates[0].heads: means nothing on the cross-attention");
  c.gates = {gate_at("output", models::kSiteEncoder, 0)};
  c.gates[0].all_layers = false;
  c.gates[0].layers = {1};  // the encoder has one block
  expect_config_error(c, "model.gates[0].layers: block index 1 out of range [0, 1)");
  c.gates = {gate_at("output", models::kSiteCross, 0), gate_at("output", models::kSiteCross, 1)};
  expect_config_error(c, "already has a 'output' gate");
  c.gates = {gate_at("output", models::kSiteCross, 0), gate_at("output", models::kSiteSelf, 1)};
  EXPECT_NO_THROW(c.validate());  // one per site
  c.gates = {gate_at("output", "decoder", 0)};
  expect_config_error(c, "model.gates[0].where: expected self, encoder or cross");
}

TEST(EncoderDecoder, ForwardNeedsItsSource) {
  models::GPT m(seq2seq_config(), 1);
  const Targets t = targets(1, 3, 1);
  EXPECT_THROW(m.forward(t.x, t.y), ValueError);
  models::ForwardOptions fo;
  fo.source = sources({2}, 7, 1);  // longer than block_size
  EXPECT_THROW(m.forward(t.x, t.y, fo), ShapeError);
  fo.source = Tensor::from_ints({kSeq2SeqPad, 3}, {1, 2});  // no token before the padding
  EXPECT_THROW(m.forward(t.x, t.y, fo), ValueError);
  fo.source = sources({2, 2}, 3, 1);  // batch 2 for targets of batch 1
  EXPECT_THROW(m.forward(t.x, t.y, fo), ShapeError);
  ModelConfig d = seq2seq_config();
  d.arch = models::kArchDecoder;
  d.n_encoder_layer = 0;
  models::GPT decoder(d, 1);
  fo.source = sources({2}, 3, 1);
  EXPECT_THROW(decoder.forward(t.x, t.y, fo), ValueError);
  models::KVCache cache(seq2seq_config(), 1);
  EXPECT_THROW(m.forward_cached(Tensor::from_ints({kSeq2SeqStart}, {1, 1}), cache), ValueError);
}

TEST(EncoderDecoder, FlopsCountTheEncoderAndCrossAttention) {
  ModelConfig c = seq2seq_config();
  ModelConfig d = c;
  d.arch = models::kArchDecoder;
  d.n_encoder_layer = 0;
  const double C = 4, T = 6;
  // One encoder block (12C² per token, all T keys) and the cross sublayers (4C² and T keys each).
  const double extra = 6 * (12 * C * C + 2 * 4 * C * C) + 12 * C * T + 2 * 12 * C * T;
  EXPECT_NEAR(models::GPT(c, 1).flops_per_token(6) - models::GPT(d, 1).flops_per_token(6), extra, 1e-6);
}

}  // namespace
}  // namespace gattn
