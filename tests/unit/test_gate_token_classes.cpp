// The gate by token class: the classes of a sequence's tokens (framework/text/token_class.h), every
// sequence's gate value per position in the inspection (LayerInspection::gate_by_position), and the
// table gattn inspect and report print from them (recipes/common/gate_token_classes.h).
#include <gtest/gtest.h>

#include <cmath>

#include "framework/io/byte_vocab.h"
#include "framework/text/token_class.h"
#include "model_test_util.h"
#include "models/gpt.h"
#include "ops/shape.h"
#include "recipes/common/gate_token_classes.h"

namespace gattn {
namespace {

using C = TokenClass;

std::vector<std::string> chars(const std::string& text) {
  std::vector<std::string> out;
  for (char c : text) out.emplace_back(1, c);
  return out;
}

TEST(TokenClasses, CharactersTakeTheClassOfTheirWord) {
  // "The king, o'er thee." : The → function, king → content, "," punct, o'er (one word with its
  // apostrophe) → function, thee → function, "." punct, spaces other.
  const std::vector<C> got = classify_tokens(chars("The king, o'er thee."));
  const std::vector<C> want = {C::function_word, C::function_word, C::function_word, C::other,         C::content_word,
                               C::content_word,  C::content_word,  C::content_word,  C::punctuation,   C::other,
                               C::function_word, C::function_word, C::function_word, C::function_word, C::other,
                               C::function_word, C::function_word, C::function_word, C::function_word, C::punctuation};
  EXPECT_EQ(got, want);
}

TEST(TokenClasses, SubwordPiecesAndSpecialTokens) {
  // Byte-level BPE pieces: " the" is a function word, "run" + "ning" one content word, " ," punct; a
  // special token (empty bytes) and a newline are other.
  const std::vector<C> got = classify_tokens({"", " the", " run", "ning", " ,", "\n", "'tis", "!?"});
  const std::vector<C> want = {C::other,       C::function_word, C::content_word,  C::content_word,
                               C::punctuation, C::other,         C::function_word, C::punctuation};
  EXPECT_EQ(got, want);
  // A token with punctuation and a word's bytes takes the word's class; non-ASCII bytes are letters.
  EXPECT_EQ(classify_tokens({"(Lo", "rd)"}), (std::vector<C>{C::content_word, C::content_word}));
  EXPECT_EQ(classify_tokens({"caf", "\xc3\xa9", " "}), (std::vector<C>{C::content_word, C::content_word, C::other}));
  EXPECT_TRUE(classify_tokens({}).empty());
}

TEST(TokenClasses, FunctionWordList) {
  for (const char* w : {"the", "The", "THOU", "hath", "doth", "and", "of", "o'er", "tis", "i'll"})
    EXPECT_TRUE(is_function_word(w)) << w;
  for (const char* w : {"king", "Romeo", "sword", "love", "", "the'", "thee2"}) EXPECT_FALSE(is_function_word(w)) << w;
}

TEST(TokenClasses, MeansByClass) {
  TokenClassMeans m;
  EXPECT_TRUE(m.empty());
  m.add(C::content_word, 0.8);
  m.add(C::content_word, 0.6);
  m.add(C::punctuation, 0.1);
  EXPECT_FALSE(m.empty());
  EXPECT_NEAR(m.mean(C::content_word), 0.7, 1e-15);
  EXPECT_EQ(m.count[static_cast<std::size_t>(C::content_word)], 2);
  EXPECT_TRUE(std::isnan(m.mean(C::function_word)));
}

// Every sequence's row of gate_by_position is what that sequence alone gives, and the first row is
// gate_by_token: for every kind whose gates report per position.
class GateByPosition : public ::testing::TestWithParam<std::string> {};

TEST_P(GateByPosition, EachRowIsItsSequenceAlone) {
  const models::ModelConfig c = test::tiny_config(GetParam());
  models::GPT model(c, 5);
  test::perturb_gate_parameters(model, 9);
  model.eval();
  models::ForwardOptions fo;
  fo.inspect = true;
  const std::int64_t B = 3, T = c.block_size;
  const Tensor idx = test::tokens(B, T, c.vocab_size, 4);
  const models::ForwardResult all = model.forward(idx, Tensor(), fo);
  for (std::int64_t b = 0; b < B; ++b) {
    const models::ForwardResult one = model.forward(ops::slice(idx, 0, b, b + 1), Tensor(), fo);
    for (std::size_t l = 0; l < all.inspection.size(); ++l) {
      const std::vector<double>& rows = all.inspection[l].gate_by_position;
      if (GetParam() == models::kNoGate) {
        EXPECT_TRUE(rows.empty());
        continue;
      }
      ASSERT_EQ(rows.size(), static_cast<std::size_t>(B * T)) << "layer " << l;
      const std::vector<double>& alone = one.inspection[l].gate_by_token;
      ASSERT_EQ(alone.size(), static_cast<std::size_t>(T));
      for (std::int64_t t = 0; t < T; ++t)
        EXPECT_NEAR(rows[static_cast<std::size_t>(b * T + t)], alone[static_cast<std::size_t>(t)], 1e-12)
            << "layer " << l << ", sequence " << b << ", position " << t;
      if (b == 0) {
        for (std::int64_t t = 0; t < T; ++t)
          EXPECT_EQ(rows[static_cast<std::size_t>(t)], all.inspection[l].gate_by_token[static_cast<std::size_t>(t)]);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllKinds, GateByPosition, ::testing::ValuesIn(test::all_gate_kinds()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

models::ModelConfig cross_gated(const std::vector<std::string>& kinds) {
  models::ModelConfig c;
  c.vocab_size = 9;
  c.block_size = 8;
  c.n_layer = 1;
  c.n_encoder_layer = 1;
  c.n_head = 2;
  c.n_embd = 4;
  c.arch = models::kArchEncoderDecoder;
  c.dtype = DType::f64;
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    models::GateConfig g;
    g.kind = kinds[i];
    g.site = models::kSiteCross;
    g.where = "model.gates[" + std::to_string(i) + "]";
    c.gates.push_back(g);
  }
  return c;
}

// A cross-attention's key gates report along the source: they stay out of gate_by_position (indexed
// by the decoder's positions), while a gate on the decoder state fills it.
TEST(GateByPosition, CrossAttentionKeepsOnlyTheQuerySidesGates) {
  const Tensor source = Tensor::from_ints({3, 4, 5, 6, 3, 7, 8}, {1, 7});  // S = 7 ≠ T = 4
  const Tensor x = Tensor::from_ints({kSeq2SeqStart, 3, 4, 5}, {1, 4});
  models::ForwardOptions fo;
  fo.inspect = true;
  fo.source = source;
  for (const auto& [kinds, per_position] :
       std::vector<std::pair<std::vector<std::string>, bool>>{{{"score"}, false}, {{"context"}, true}}) {
    models::GPT model(cross_gated(kinds), 3);
    test::perturb_gate_parameters(model, 2);
    model.eval();
    const models::ForwardResult r = model.forward(x, Tensor(), fo);
    ASSERT_EQ(r.cross_inspection.size(), 1u);
    const models::LayerInspection& in = r.cross_inspection[0];
    EXPECT_FALSE(in.gate_values.empty()) << kinds[0];
    EXPECT_EQ(in.gate_by_position.size(), per_position ? 4u : 0u) << kinds[0];
  }
}

// The table: a hand-made inspection over "to be, or" (byte vocabulary), read and next views.
TEST(GateTokenClassTable, CountsEachPositionUnderItsClass) {
  const std::optional<ByteVocab> vocab = ByteVocab::from_json(R"([32, 44, 98, 101, 111, 114, 116])");  // " ,beort"
  ASSERT_TRUE(vocab);
  const std::vector<std::int32_t> ids = vocab->encode("to be, or");
  const auto T = static_cast<std::int64_t>(ids.size()) - 1;
  Batch batch;
  batch.x = Tensor::from_ints(std::vector<std::int32_t>(ids.begin(), ids.end() - 1), {1, T});
  batch.y = Tensor::from_ints(std::vector<std::int32_t>(ids.begin() + 1, ids.end()), {1, T});
  models::ForwardResult r;
  r.inspection.resize(2);
  r.inspection[1].gate_by_position.resize(static_cast<std::size_t>(T));
  for (std::int64_t t = 0; t < T; ++t) r.inspection[1].gate_by_position[static_cast<std::size_t>(t)] = 0.1 * t;
  const std::vector<recipes::GateTokenClassRow> rows = recipes::gate_token_classes(r, batch, &*vocab, false);
  ASSERT_EQ(rows.size(), 2u);  // layer 0 has no per-position gate
  // x = "to be, o": t o ␣ b e , ␣ o → function ×2, other, function ×2, punct, other, function.
  EXPECT_EQ(rows[0].view, "read");
  EXPECT_EQ(rows[0].layer, 1);
  EXPECT_NEAR(rows[0].means.mean(C::punctuation), 0.5, 1e-12);
  EXPECT_NEAR(rows[0].means.mean(C::other), (0.2 + 0.6) / 2, 1e-12);
  EXPECT_NEAR(rows[0].means.mean(C::function_word), (0.0 + 0.1 + 0.3 + 0.4 + 0.7) / 5, 1e-12);
  EXPECT_TRUE(std::isnan(rows[0].means.mean(C::content_word)));
  // y = "o be, or": position t counts for the token it predicts, x's classes shifted by one.
  EXPECT_EQ(rows[1].view, "next");
  EXPECT_NEAR(rows[1].means.mean(C::punctuation), 0.4, 1e-12);
  EXPECT_NEAR(rows[1].means.mean(C::other), (0.1 + 0.5) / 2, 1e-12);
  const std::string table = recipes::format_gate_token_classes(rows);
  EXPECT_NE(table.find("0.5000 (1)"), std::string::npos) << table;
  EXPECT_NE(table.find("- (0)"), std::string::npos) << table;
  // No text, no classes.
  EXPECT_TRUE(recipes::gate_token_classes(r, batch, nullptr, false).empty());
}

}  // namespace
}  // namespace gattn
