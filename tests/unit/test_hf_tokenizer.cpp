// Hugging Face tokenizers (framework/text/hf_tokenizer.h): ids equal to `tokenizers`' on the
// committed files and goldens (tests/interop/make_tokenizer_goldens.py), round trips, blocks of a
// corpus encoded apart, the pre-tokenizer behaviors and added-token flags, refusals of what gattn
// does not read, loading either kind of tokenizer directory, and the checkpoint's tokenizer entry.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "framework/base/errors.h"
#include "framework/io/checkpoint_text.h"
#include "framework/io/errors.h"
#include "framework/text/digest.h"
#include "framework/text/hf_tokenizer.h"
#include "framework/text/subword_tokenizer.h"
#include "framework/text/text_blocks.h"
#include "framework/text/tokenizer_directory.h"
#include "framework/text/unicode_nfc.h"
#include "test_util.h"

namespace gattn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::contains;
using test::message_of;
using test::read_file;
using test::TempDir;
using test::write_text;

const fs::path kData = fs::path(GATTN_SOURCE_DIR) / "tests" / "data" / "tokenizer";
const char* const kFamilies[] = {"gpt2", "llama3", "qwen2_5", "llama2"};

const HfTokenizer& committed(const std::string& name) {
  static std::map<std::string, std::shared_ptr<const HfTokenizer>> cache;
  auto& slot = cache[name];
  if (!slot) slot = HfTokenizer::load((kData / name).string());
  return *slot;
}

json goldens(const fs::path& file) { return json::parse(read_file(file.string())); }

std::vector<std::int32_t> ids_of(const json& list) { return list.get<std::vector<std::int32_t>>(); }

// Where two id lists part, with the pieces around it, for a failure message.
std::string first_difference(const Tokenizer& t, const std::vector<std::int32_t>& got,
                             const std::vector<std::int32_t>& want) {
  std::size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  const auto around = [&](const std::vector<std::int32_t>& ids) {
    std::string out;
    for (std::size_t k = i >= 3 ? i - 3 : 0; k < std::min(ids.size(), i + 4); ++k)
      out.append(k == i ? "[" : "")
          .append(std::to_string(ids[k]))
          .append(" '")
          .append(display_token(t.token_bytes(ids[k])))
          .append(k == i ? "'] " : "' ");
    return out;
  };
  return "at id " + std::to_string(i) + " of " + std::to_string(want.size()) + ": gattn " + around(got) +
         "| tokenizers " + around(want);
}

// Every case: encode() = add_special_tokens=False, encode_prompt() = True; the text comes back from
// its ids where they hold no special token (Qwen's as its NFC form).
void expect_goldens(const HfTokenizer& t, const json& g, const std::string& family) {
  ASSERT_GT(g["cases"].size(), 10u);
  for (const json& c : g["cases"]) {
    const std::string text = c["text"].get<std::string>(), name = family + ": " + c["name"].get<std::string>();
    const std::vector<std::int32_t> ids = t.encode(text), want = ids_of(c["ids"]);
    EXPECT_EQ(ids, want) << name << " " << first_difference(t, ids, want);
    const std::vector<std::int32_t> framed = t.encode_prompt(text), framed_want = ids_of(c["ids_with_special_tokens"]);
    EXPECT_EQ(framed, framed_want) << name << " " << first_difference(t, framed, framed_want);
    const bool special = std::any_of(
        ids.begin(), ids.end(), [&](std::int32_t id) { return t.token_bytes(id).empty() && !t.piece(id).empty(); });
    if (!special) {
      EXPECT_EQ(t.decode(ids), family == "qwen2_5" ? to_nfc(text) : text) << name;
    }
  }
}

TEST(HfTokenizer, MatchesTokenizersOnTheCommittedFiles) {
  for (const char* family : kFamilies) {
    SCOPED_TRACE(family);
    expect_goldens(committed(family), goldens(kData / (std::string(family) + ".goldens.json")), family);
  }
}

// The full files, when the script wrote them (make_tokenizer_goldens.py --full DIR --text FILE).
TEST(HfTokenizerFull, MatchesTokenizersOnTheFullFiles) {
  const char* dir = std::getenv("GATTN_HF_TOKENIZERS_FULL");
  if (!dir) GTEST_SKIP() << "GATTN_HF_TOKENIZERS_FULL names no directory of full tokenizers";
  for (const char* family : kFamilies) {
    SCOPED_TRACE(family);
    const auto t = HfTokenizer::load((fs::path(dir) / family).string());
    expect_goldens(*t, goldens(fs::path(dir) / (std::string(family) + ".goldens.json")), family);
  }
}

TEST(HfTokenizer, WhatEachFamilyIs) {
  const HfTokenizer &gpt2 = committed("gpt2"), &llama3 = committed("llama3"), &qwen = committed("qwen2_5"),
                    &llama2 = committed("llama2");
  EXPECT_EQ(gpt2.size(), 50257);
  EXPECT_EQ(gpt2.end_of_document(), 50256);  // <|endoftext|>, tokenizer_config.json's eos_token
  EXPECT_EQ(gpt2.start_token(), 50256);      // no post-processor token: a new document starts after it
  EXPECT_EQ(gpt2.piece(50256), "<|endoftext|>");
  EXPECT_EQ(gpt2.token_bytes(50256), "");     // special tokens stand for no text
  EXPECT_EQ(gpt2.piece(262), "\xC4\xA0the");  // "Ġthe"
  EXPECT_EQ(gpt2.token_bytes(262), " the");
  EXPECT_EQ(gpt2.token_bytes(198), "\n");
  // The truncated files keep 3,774 and 3,745 tokens of the vocabulary; the added tokens follow.
  EXPECT_EQ(llama3.piece(3774), "<|begin_of_text|>");
  EXPECT_EQ(llama3.size(), 3774 + 256);
  EXPECT_EQ(llama3.start_token(), 3774);
  EXPECT_EQ(llama3.end_of_document(), 3775);  // <|end_of_text|>
  EXPECT_EQ(llama3.encode_prompt("Hi").front(), 3774);
  EXPECT_EQ(llama3.token_bytes(-1), "");
  EXPECT_EQ(llama3.token_bytes(5000), "");
  EXPECT_EQ(qwen.piece(3745), "<|endoftext|>");
  EXPECT_EQ(qwen.end_of_document(), 3745);
  EXPECT_EQ(qwen.start_token(), 3745);
  EXPECT_EQ(qwen.piece(3759), "<tool_call>");
  EXPECT_EQ(qwen.token_bytes(3759), "<tool_call>");        // not special: it decodes to its text
  EXPECT_EQ(qwen.encode_prompt("Hi"), qwen.encode("Hi"));  // Qwen frames nothing
  EXPECT_EQ(llama2.piece(1), "<s>");
  EXPECT_EQ(llama2.start_token(), 1);
  EXPECT_EQ(llama2.end_of_document(), 2);
  EXPECT_EQ(llama2.token_bytes(3 + 0x0A), "\n");  // <0x0A>
  for (const char* family : kFamilies) {
    const HfTokenizer& t = committed(family);
    EXPECT_TRUE(contains(t.kind(), "Hugging Face"));
    EXPECT_EQ(t.sha256(), hf_tokenizer_sha256(t.files()));
    EXPECT_EQ(t.files().at("tokenizer.json"), read_file((kData / family / "tokenizer.json").string()));
    // The bytes of the ids, token by token, are the decoded text (Llama 2's less its "▁" prefix's space).
    const std::vector<std::int32_t> ids = t.encode("Ünïcode 😀 and\ttabs  ");
    std::string joined;
    for (std::int32_t id : ids) joined += t.token_bytes(id);
    EXPECT_EQ(joined, std::string(family) == "llama2" ? " " + t.decode(ids) : t.decode(ids)) << family;
  }
  EXPECT_EQ(hf_tokenizer_sha256(committed("gpt2").files()),
            sha256_hex(read_file((kData / "gpt2" / "tokenizer.json").string())));
}

TEST(HfTokenizer, RefusesTextThatIsNotUtf8) {
  for (const char* family : kFamilies) {
    const std::string message = message_of<ValueError>([&] { committed(family).encode("ok \xff bytes"); });
    EXPECT_TRUE(contains(message, "not valid UTF-8 at byte offset 3 (0xFF)")) << message;
  }
  EXPECT_THROW(committed("gpt2").encode("\xC0\xAF"), ValueError);      // an overlong form
  EXPECT_THROW(committed("gpt2").encode("\xED\xA0\x80"), ValueError);  // a surrogate
}

// A corpus cut into blocks where TextBlocks' strict cuts allow, each encoded on its own, gives the
// ids of the whole (corpus encoding relies on it).
TEST(HfTokenizer, BlocksCutBetweenNonSpaceGiveTheIdsOfTheWhole) {
  const std::string corpus = read_file((kData / "corpus.txt").string());
  TempDir dir;
  const std::string path = (dir.path() / "corpus.txt").string();
  write_text(path, corpus + "\n" + corpus);
  for (const char* family : kFamilies) {
    const HfTokenizer& t = committed(family);
    TextBlocks blocks(path, "the corpus", 200, true);
    std::vector<std::int32_t> ids;
    std::string block;
    std::size_t count = 0;
    for (bool continues = false; blocks.next(block); continues = true, ++count) {
      const std::vector<std::int32_t> part = t.encode_block(block, continues);
      ids.insert(ids.end(), part.begin(), part.end());
    }
    EXPECT_GT(count, 10u);
    const std::vector<std::int32_t> whole = t.encode(corpus + "\n" + corpus);
    EXPECT_EQ(ids, whole) << family << " " << first_difference(t, ids, whole);
  }
}

// tiny_gpt2's tokenizer with other pre-tokenizers, normalizers and added tokens.
TEST(HfTokenizer, SplitBehaviorsAndAddedTokenFlagsMatchTokenizers) {
  const json g = goldens(kData / "variants.goldens.json");
  const json base = json::parse(read_file((kData / "tiny_gpt2" / "tokenizer.json").string()));
  ASSERT_GE(g["variants"].size(), 13u);
  for (const json& v : g["variants"]) {
    json tj = base;
    tj["pre_tokenizer"] = v["pre_tokenizer"];
    tj["normalizer"] = v["normalizer"];
    tj["added_tokens"] = v["added_tokens"];
    const HfTokenizer t({{"tokenizer.json", tj.dump()}}, v["name"].get<std::string>());
    for (const json& c : v["cases"])
      EXPECT_EQ(t.encode(c["text"].get<std::string>()), ids_of(c["ids"]))
          << v["name"].get<std::string>() << ": " << c["text"];
  }
}

// tiny_gpt2's tokenizer.json with one change.
std::string edited(const std::function<void(json&)>& edit) {
  json tj = json::parse(read_file((kData / "tiny_gpt2" / "tokenizer.json").string()));
  edit(tj);
  return tj.dump();
}

TEST(HfTokenizer, RefusesWhatItDoesNotImplementNamingIt) {
  const auto refusal = [](const std::string& file) {
    return message_of<ValueError>([&] { HfTokenizer({{"tokenizer.json", file}}, "dir"); });
  };
  for (const char* model : {"WordPiece", "Unigram", "WordLevel"})
    EXPECT_TRUE(contains(refusal(edited([&](json& j) { j["model"]["type"] = model; })), model));
  EXPECT_TRUE(contains(refusal(edited([](json& j) { j["pre_tokenizer"] = {{"type", "Whitespace"}}; })), "Whitespace"));
  EXPECT_TRUE(contains(refusal(edited([](json& j) {
                         j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"}};
                       })),
                       "Metaspace"));
  EXPECT_TRUE(contains(refusal(edited([](json& j) { j["normalizer"] = {{"type", "NFKC"}}; })), "NFKC"));
  EXPECT_TRUE(contains(refusal(edited([](json& j) { j["decoder"] = {{"type", "WordPiece"}}; })), "decoder"));
  EXPECT_TRUE(contains(refusal(edited([](json& j) {
                         j["post_processor"] = {{"type", "RobertaProcessing"}};
                       })),
                       "RobertaProcessing"));
  EXPECT_TRUE(contains(refusal(edited([](json& j) { j["model"]["dropout"] = 0.1; })), "dropout"));
  EXPECT_TRUE(contains(refusal(edited([](json& j) { j["pre_tokenizer"] = nullptr; })), "ByteLevel"));
  EXPECT_TRUE(contains(
      refusal(edited([](json& j) {
        j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}};
      })),
      "does not compile"));
  // Llama 2's family without its tokenizer.model.
  EXPECT_TRUE(
      contains(message_of<ValueError>([&] {
                 HfTokenizer({{"tokenizer.json", read_file((kData / "llama2" / "tokenizer.json").string())}}, "dir");
               }),
               "tokenizer.model"));
}

TEST(HfTokenizer, DamagedFilesAreDataErrors) {
  const auto damage = [](const std::map<std::string, std::string>& files) {
    return message_of<DataError>([&] { HfTokenizer(files, "dir"); });
  };
  EXPECT_TRUE(contains(damage({{"tokenizer.json", "{not json"}}), "not a JSON object"));
  EXPECT_TRUE(contains(damage({{"tokenizer.json", edited([](json& j) { j["model"]["merges"].push_back("Ġ zzz"); })}}),
                       "'zzz', which the vocabulary does not have"));
  EXPECT_TRUE(contains(damage({{"tokenizer.json", edited([](json& j) {
                                  j["model"]["merges"].push_back(json::array({"x", "qqq"}));
                                })}}),
                       "qqq"));
  EXPECT_TRUE(contains(damage({{"tokenizer.json", edited([](json& j) { j["model"]["vocab"].erase("!"); })}}),
                       "no token for byte 33"));
  EXPECT_TRUE(
      contains(damage({{"tokenizer.json", edited([](json& j) { j["model"]["vocab"]["x"] = "one"; })}}), "not an id"));
  EXPECT_TRUE(contains(damage({{"tokenizer.json", edited([](json& j) { j["added_tokens"][0].erase("content"); })}}),
                       "added token"));
  EXPECT_TRUE(contains(damage({{"tokenizer.json", read_file((kData / "tiny_gpt2" / "tokenizer.json").string())},
                               {"tokenizer_config.json", R"({"eos_token": "<nope>"})"}}),
                       "eos_token '<nope>'"));
  // Llama 2's tokenizer.json with another tokenizer.model: files of two tokenizers.
  std::string model = read_file((kData / "llama2" / "tokenizer.model").string());
  json tj = json::parse(read_file((kData / "llama2" / "tokenizer.json").string()));
  tj["model"]["vocab"]["<0x00>"] = 4;
  tj["model"]["vocab"]["<0x01>"] = 3;
  EXPECT_TRUE(contains(damage({{"tokenizer.json", tj.dump()}, {"tokenizer.model", model}}), "disagree"));
  EXPECT_TRUE(contains(damage({{"tokenizer.json", read_file((kData / "llama2" / "tokenizer.json").string())},
                               {"tokenizer.model", "not a model"}}),
                       "tokenizer.model"));
}

TEST(HfTokenizer, LoadTokenizerTellsTheKindsApart) {
  const auto hf = load_tokenizer((kData / "gpt2").string());
  EXPECT_TRUE(dynamic_cast<const HfTokenizer*>(hf.get()));
  EXPECT_EQ(load_tokenizer((kData / "gpt2" / "tokenizer.json").string())->sha256(), hf->sha256());
  EXPECT_TRUE(is_hf_tokenizer_directory((kData / "llama2").string()));
  // gattn's own directory: tokenizer.model beside a tokenizer.json that is not Hugging Face's.
  TempDir dir;
  fs::copy_file(kData / "llama2" / "tokenizer.model", dir.path() / "tokenizer.model");
  write_text((dir.path() / "tokenizer.json").string(), R"({"format": "gattn-tokenizer/1", "model_type": "bpe"})");
  EXPECT_FALSE(is_hf_tokenizer_directory(dir.path().string()));
  const auto own = load_tokenizer(dir.path().string());
  EXPECT_TRUE(dynamic_cast<const SubwordTokenizer*>(own.get()));
  EXPECT_EQ(own->sha256(), sha256_hex(read_file((kData / "llama2" / "tokenizer.model").string())));
  fs::remove(dir.path() / "tokenizer.model");
  EXPECT_TRUE(contains(message_of<DataError>([&] { load_tokenizer(dir.path().string()); }), "neither"));
}

TEST(HfTokenizer, CheckpointMetadataCarriesTheFilesByteForByte) {
  for (const char* family : {"gpt2", "llama2"}) {
    const HfTokenizer& t = committed(family);
    std::map<std::string, std::string> meta;
    add_tokenizer_metadata(meta, t);
    EXPECT_TRUE(meta.count(kHfTokenizerKey));
    EXPECT_FALSE(meta.count(kTokenizerKey));
    EXPECT_EQ(meta.at(kTokenizerShaKey), t.sha256());
    const auto back = tokenizer_from_metadata(meta, "ckpt");
    ASSERT_TRUE(back);
    EXPECT_EQ(back->sha256(), t.sha256());
    EXPECT_EQ(back->encode("Hello world"), t.encode("Hello world"));
    const std::map<std::string, std::string> files = tokenizer_files(meta, "ckpt");
    EXPECT_EQ(files, t.files());
    for (const auto& [name, bytes] : files) EXPECT_EQ(bytes, read_file((kData / family / name).string())) << name;
    EXPECT_EQ(text_codec_from_metadata(meta, "ckpt")->size(), t.size());

    const auto damaged = [&](const std::function<void(std::map<std::string, std::string>&)>& edit) {
      std::map<std::string, std::string> m = meta;
      edit(m);
      return message_of<CheckpointError>([&] { tokenizer_from_metadata(m, "ckpt"); });
    };
    EXPECT_TRUE(contains(damaged([](auto& m) { m[kHfTokenizerKey] = "[1]"; }), "not a JSON object"));
    EXPECT_TRUE(contains(damaged([](auto& m) { m[kHfTokenizerKey] = R"({"tokenizer.json": "!!"})"; }), "not base64"));
    EXPECT_TRUE(contains(damaged([](auto& m) { m[kHfTokenizerKey] = R"({"evil.sh": "AA=="})"; }), "unknown file"));
    EXPECT_TRUE(contains(damaged([](auto& m) { m[kTokenizerShaKey] = std::string(64, '0'); }), "not the recorded"));
    EXPECT_TRUE(contains(damaged([](auto& m) { m.erase(kTokenizerShaKey); }), "without"));
    EXPECT_TRUE(contains(damaged([](auto& m) { m[kTokenizerKey] = "AA=="; }), "both"));
    EXPECT_TRUE(contains(damaged([](auto& m) { m[kHfTokenizerKey] = R"({"tokenizer.json": "e30="})"; }),
                         "ckpt: "));  // "{}": not a tokenizer
  }
  // gattn's own tokenizers keep their entry: tokenizer_files gives tokenizer.model.
  const std::string model = read_file((kData / "llama2" / "tokenizer.model").string());
  const SubwordTokenizer own(model, "test");
  std::map<std::string, std::string> meta;
  add_tokenizer_metadata(meta, own);
  EXPECT_TRUE(meta.count(kTokenizerKey));
  EXPECT_EQ(tokenizer_files(meta, "ckpt"), (std::map<std::string, std::string>{{"tokenizer.model", model}}));
  EXPECT_TRUE(tokenizer_files({}, "ckpt").empty());
}

TEST(HfTokenizer, LongInputsAndRepeatedWordsStayExact) {
  const HfTokenizer& t = committed("llama3");
  // A megabyte of one whitespace run and one long word: the regex and the merges take them whole.
  const std::string spaces(1 << 20, ' ');
  EXPECT_EQ(t.decode(t.encode(spaces)), spaces);
  std::string word;
  for (int i = 0; i < 5000; ++i) word += "abcdefghij"[i % 10];
  EXPECT_EQ(t.decode(t.encode(word)), word);
  // The word cache gives the same ids as a fresh merge.
  const std::string text = "the cat sat on the mat, the cat sat on the mat";
  const std::vector<std::int32_t> once = t.encode(text);
  EXPECT_EQ(t.encode(text), once);
  const auto fresh = HfTokenizer::load((kData / "llama3").string());
  EXPECT_EQ(fresh->encode(text), once);
}

}  // namespace
}  // namespace gattn
