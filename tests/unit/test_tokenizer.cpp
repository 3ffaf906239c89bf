// Subword tokenizers (`gattn tokenize`): training, exact round trips on multilingual text, the
// corpus encoder's shards and split, the checkpoint's tokenizer entry, and the pieces around them
// (SHA-256 and base64, text blocks, token display, staged output directories, the progress bar).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "framework/base/errors.h"
#include "framework/data/corpus_encoding.h"
#include "framework/data/shard_tokenizer.h"
#include "framework/data/token_shards.h"
#include "framework/io/checkpoint_text.h"
#include "framework/io/errors.h"
#include "framework/io/staged_directory.h"
#include "framework/text/digest.h"
#include "framework/text/subword_tokenizer.h"
#include "framework/text/text_blocks.h"
#include "framework/text/tokenizer_training.h"
#include "recipes/common/progress_bar.h"
#include "test_util.h"

namespace gattn {
namespace {

namespace fs = std::filesystem;
using test::contains;
using test::message_of;
using test::read_file;
using test::TempDir;
using test::write_text;

// Text in several scripts, with the whitespace a tokenizer could lose: runs of spaces, tabs,
// leading spaces, blank lines, CRLF, and no newline at the end.
std::string multilingual_text() {
  std::string s;
  const char* lines[] = {
      "First Citizen:  Before we proceed any further, hear me speak.",
      "  indented line\twith a tab, and   three spaces",
      "",
      "中文文本：今天天气很好，我们去公园散步吧。",
      "日本語のテキストも少し。Emoji: 🎉🦄👍🏽 and a flag 🇫🇷",
      "naïve café — résumé, Ærøskøbing, Straße, Ελληνικά, русский текст",
      "numbers 3.14159 and 2026-12-02, code: if (x) { y(); }\r",
      "",
  };
  // Between them, lines of made-up words, so BPE has merges to learn beyond the repeated lines.
  const char* syllables[] = {"ta", "ke", "ri", "so", "mu", "an", "el", "th", "or", "ing", "qu", "be", "la", "ven"};
  std::uint32_t state = 12345;
  for (int rep = 0; rep < 40; ++rep) {
    for (const char* line : lines) s.append(line).append("\n");
    for (int word = 0; word < 30; ++word) {
      for (int k = 0; k < 1 + word % 3; ++k) {
        state = state * 1664525u + 1013904223u;
        s += syllables[(state >> 16) % 14];
      }
      s += word == 29 ? "\n" : " ";
    }
  }
  s += "the end, without a newline";
  return s;
}

// Characters the training text never had: they must come back through byte fallback.
const char* const kUnseen = "새로운 한국어 문장 😀 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ☃ \x01 control\n\n  trailing  ";

// One small tokenizer per model type, trained once for the suite.
const SubwordTokenizer& trained(const std::string& model_type) {
  static std::map<std::string, std::unique_ptr<SubwordTokenizer>> cache;
  auto& slot = cache[model_type];
  if (!slot) {
    const fs::path file = fs::temp_directory_path() / ("gattn_tokenizer_corpus_" + std::to_string(::getpid()));
    write_text(file.string(), multilingual_text());
    TokenizerTrainingOptions o;
    o.inputs = {file.string()};
    o.vocab_size = 600;
    o.model_type = model_type;
    o.character_coverage = 1.0;
    slot = std::make_unique<SubwordTokenizer>(train_tokenizer(o).serialized_model, "test");
    fs::remove(file);
  }
  return *slot;
}

std::string joined_token_bytes(const SubwordTokenizer& t, const std::vector<std::int32_t>& ids) {
  std::string out;
  for (std::int32_t id : ids) out += t.token_bytes(id);
  return out;
}

TEST(SubwordTokenizer, RoundTripsMultilingualTextExactly) {
  for (const char* type : {"bpe", "unigram"}) {
    SCOPED_TRACE(type);
    const SubwordTokenizer& t = trained(type);
    EXPECT_EQ(t.size(), 600);
    for (const std::string& text : {multilingual_text(), std::string(kUnseen), std::string(" "), std::string()}) {
      const std::vector<std::int32_t> ids = t.encode(text);
      EXPECT_EQ(t.decode(ids), text);
      EXPECT_EQ(joined_token_bytes(t, ids), text);  // what `gattn sample` streams
      EXPECT_EQ(t.encode_lines(text), ids);
      for (std::int32_t id : ids) EXPECT_TRUE(id >= 0 && id < t.size());
    }
    // Learned pieces, not only bytes: the text compresses.
    EXPECT_LT(t.encode(multilingual_text()).size(), multilingual_text().size() / 2);
  }
}

TEST(SubwordTokenizer, PiecesBytesAndStartToken) {
  const SubwordTokenizer& t = trained("bpe");
  EXPECT_EQ(t.piece(3), "<0x00>");  // <unk>, <s>, </s>, then the 256 byte pieces
  EXPECT_EQ(t.token_bytes(3), std::string(1, '\0'));
  EXPECT_EQ(t.token_bytes(0x0A + 3), "\n");
  EXPECT_EQ(t.start_token(), 0x0A + 3);
  EXPECT_EQ(t.token_bytes(t.end_of_document()), "");  // control pieces stand for no text
  EXPECT_EQ(t.token_bytes(-1), "");
  EXPECT_EQ(t.token_bytes(static_cast<std::int32_t>(t.size())), "");
  EXPECT_EQ(t.decode({-5, static_cast<std::int32_t>(t.size())}), "");  // ids outside the vocabulary are dropped
  // A learned piece with SentencePiece's space mark stands for a space.
  bool found = false;
  for (std::int32_t id = 259; id < t.size() && !found; ++id)
    if (t.piece(id).rfind("\xE2\x96\x81", 0) == 0) {
      EXPECT_EQ(t.token_bytes(id)[0], ' ');
      found = true;
    }
  EXPECT_TRUE(found);
  const std::vector<std::int32_t> lengths = token_byte_lengths(t);
  ASSERT_EQ(static_cast<std::int64_t>(lengths.size()), t.size());
  EXPECT_EQ(lengths[3], 1);
  EXPECT_EQ(lengths[0], static_cast<std::int32_t>(t.token_bytes(0).size()));
}

TEST(SubwordTokenizer, TrainingIsDeterministic) {
  TempDir dir;
  write_text(dir.file("a.txt"), multilingual_text());
  TokenizerTrainingOptions o;
  o.inputs = {dir.file("a.txt")};
  o.vocab_size = 600;
  o.character_coverage = 1.0;
  const TrainedTokenizer a = train_tokenizer(o), b = train_tokenizer(o);
  EXPECT_EQ(a.serialized_model, b.serialized_model);
  EXPECT_EQ(a.info["sha256"], sha256_hex(a.serialized_model));
  EXPECT_EQ(a.info["vocab_size"], 600);
  EXPECT_EQ(a.info["lines"], 40 * 7 + 1);  // the non-empty lines
}

TEST(SubwordTokenizer, BadTrainingInput) {
  TempDir dir;
  write_text(dir.file("text.txt"), multilingual_text());
  write_text(dir.file("blank.txt"), "\n\n\n");
  TokenizerTrainingOptions o;
  o.inputs = {dir.file("text.txt")};
  o.vocab_size = 70000;
  EXPECT_TRUE(contains(message_of<ValueError>([&] { train_tokenizer(o); }), "uint16"));
  o.vocab_size = 100;
  EXPECT_TRUE(contains(message_of<ValueError>([&] { train_tokenizer(o); }), "--vocab-size 100"));
  o.vocab_size = 300;
  o.model_type = "wordpiece";
  EXPECT_TRUE(contains(message_of<ValueError>([&] { train_tokenizer(o); }), "--model-type"));
  o.model_type = "bpe";
  o.inputs = {dir.file("blank.txt")};
  EXPECT_TRUE(contains(message_of<DataError>([&] { train_tokenizer(o); }), "holds no text"));
  o.inputs = {dir.file("missing.txt")};
  EXPECT_TRUE(contains(message_of<DataError>([&] { train_tokenizer(o); }), "missing.txt"));
  o.inputs = {dir.path().string()};
  EXPECT_TRUE(contains(message_of<DataError>([&] { train_tokenizer(o); }), "directory"));
  // More pieces than the text can give: a data error in gattn's words, with the largest it can.
  write_text(dir.file("tiny.txt"), "ab ab ab\n");
  o.inputs = {dir.file("tiny.txt")};
  o.vocab_size = 5000;
  std::string msg = message_of<DataError>([&] { train_tokenizer(o); });
  EXPECT_TRUE(contains(msg, "--vocab-size 5000 is more than the input can fill (at most")) << msg;
  // Fewer than the text's characters need: a setting to change, saying to what (no SentencePiece flag).
  std::string many;
  for (int c = 0x4E00; c < 0x4E00 + 40; ++c)  // 40 CJK characters, each a piece of its own
    many += std::string{static_cast<char>(0xE0 | (c >> 12)), static_cast<char>(0x80 | ((c >> 6) & 0x3F)),
                        static_cast<char>(0x80 | (c & 0x3F))} +
            " ";
  write_text(dir.file("many.txt"), many + "\n" + many + "\n");
  o.inputs = {dir.file("many.txt")};
  o.vocab_size = 260;
  msg = message_of<ValueError>([&] { train_tokenizer(o); });
  EXPECT_TRUE(contains(msg, "--vocab-size 260 is too small for this text")) << msg;
  EXPECT_FALSE(contains(msg, "character_coverage")) << msg;
  o.vocab_size = 600;
  o.max_lines = 50;  // below SentencePiece's floor: a usage error, not its assertion
  EXPECT_TRUE(contains(message_of<ValueError>([&] { train_tokenizer(o); }), "--max-lines must be 0"));
  o.max_lines = 0;
  o.character_coverage = 0.5;
  EXPECT_TRUE(contains(message_of<ValueError>([&] { train_tokenizer(o); }), "[0.98, 1]"));
  EXPECT_TRUE(contains(message_of<DataError>([&] { SubwordTokenizer("not a model", "x.model"); }),
                       "x.model is not a SentencePiece tokenizer model"));
}

// The ids of every shard of `split` in `dir`, concatenated, read by the loader that training uses
// (which checks each header: magic, version, a count matching the file's size).
std::vector<std::int32_t> read_split(const fs::path& dir, const std::string& split) {
  std::vector<std::string> files;
  for (int i = 0;; ++i) {
    char name[64];
    std::snprintf(name, sizeof name, "%s_%06d.bin", split.c_str(), i);
    if (!fs::exists(dir / name)) break;
    files.push_back((dir / name).string());
  }
  const data_detail::TokenShards shards(files, data_detail::TokenShards::Access::sequential);
  std::vector<std::int32_t> ids(static_cast<std::size_t>(shards.size()));
  shards.copy(0, shards.size(), ids.data());
  return ids;
}

TEST(CorpusEncoding, ShardsHoldTheTextSplitAtALineStart) {
  const SubwordTokenizer& t = trained("bpe");
  TempDir dir;
  const std::string a = multilingual_text() + "\n", b = kUnseen;
  write_text(dir.file("a.txt"), a);
  write_text(dir.file("b.txt"), b);
  CorpusEncodingOptions o;
  o.inputs = {dir.file("a.txt"), dir.file("b.txt")};
  o.val_fraction = 0.25;
  o.shard_tokens = 1000;
  o.block_bytes = 700;  // many blocks, so the parallel batches and the split's cut are exercised
  std::vector<std::vector<std::int32_t>> runs;
  for (int threads : {1, 2}) {
    const fs::path out = dir.path() / ("out" + std::to_string(threads));
    fs::create_directories(out);
    o.threads = threads;
    std::uint64_t last_done = 0, total = 0;
    const nlohmann::json meta = encode_corpus(t, o, out, [&](std::uint64_t d, std::uint64_t n) {
      EXPECT_GE(d, last_done);
      last_done = d;
      total = n;
    });
    EXPECT_EQ(last_done, a.size() + b.size());
    EXPECT_EQ(total, a.size() + b.size());
    const std::vector<std::int32_t> train = read_split(out, "train"), val = read_split(out, "val");
    EXPECT_EQ(meta["train_tokens"], train.size());
    EXPECT_EQ(meta["val_tokens"], val.size());
    EXPECT_EQ(meta["tokenizer_sha256"], t.sha256());
    EXPECT_GT(meta["shards"].size(), 2u);  // 1000 ids per shard
    // Decoded, the splits are the two files in order; the val split begins at a line start near 75%.
    const std::string train_text = t.decode(train), val_text = t.decode(val);
    EXPECT_EQ(train_text + val_text, a + b);
    EXPECT_EQ(train_text.back(), '\n');
    EXPECT_NEAR(static_cast<double>(train_text.size()) / static_cast<double>(a.size() + b.size()), 0.75, 0.02);
    EXPECT_EQ(meta["train_bytes"], train_text.size());
    // Each file ends with the end-of-document token, and the ids are the files' own encodings.
    std::vector<std::int32_t> expected = t.encode(a);
    expected.push_back(t.end_of_document());
    const std::vector<std::int32_t> b_ids = t.encode(b);
    expected.insert(expected.end(), b_ids.begin(), b_ids.end());
    expected.push_back(t.end_of_document());
    std::vector<std::int32_t> all = train;
    all.insert(all.end(), val.begin(), val.end());
    EXPECT_EQ(all, expected);
    runs.push_back(all);
  }
  EXPECT_EQ(runs[0], runs[1]);  // the same shards for any thread count
}

TEST(CorpusEncoding, BadInput) {
  const SubwordTokenizer& t = trained("bpe");
  TempDir dir;
  write_text(dir.file("one_line.txt"), "a single line without any newline at all");
  write_text(dir.file("empty.txt"), "");
  CorpusEncodingOptions o;
  o.inputs = {dir.file("one_line.txt")};
  // One line: the val split would start after the end of the text.
  EXPECT_TRUE(
      contains(message_of<DataError>([&] { encode_corpus(t, o, dir.path(), nullptr); }), "the val split is empty"));
  o.inputs = {dir.file("empty.txt")};
  EXPECT_TRUE(contains(message_of<DataError>([&] { encode_corpus(t, o, dir.path(), nullptr); }), "holds no text"));
  o.inputs = {dir.file("one_line.txt")};
  o.val_fraction = 1.0;
  EXPECT_TRUE(contains(message_of<ValueError>([&] { encode_corpus(t, o, dir.path(), nullptr); }), "--val-fraction"));
  o.val_fraction = 0.1;
  o.shard_tokens = 0;
  EXPECT_TRUE(contains(message_of<ValueError>([&] { encode_corpus(t, o, dir.path(), nullptr); }), "--shard-tokens"));
}

TEST(TextBlocks, BlocksEndAtLineEndsAndJoinToTheFile) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 300; ++i) text += std::string(static_cast<std::size_t>(i % 37), 'x') + "é\n";
  const std::string long_line = std::string(5000, 'y') + "中";  // longer than four blocks, no newline
  text += long_line + std::string(3000, 'z') + "\nlast";
  write_text(dir.file("t.txt"), text);
  TextBlocks blocks(dir.file("t.txt"), "the text", 1000);
  EXPECT_EQ(blocks.size(), text.size());
  std::string joined, block;
  int cut_mid_line = 0;
  while (blocks.next(block)) {
    EXPECT_LE(block.size(), 4000u);
    joined += block;
    if (block.back() != '\n') {
      ++cut_mid_line;
      EXPECT_NE(static_cast<unsigned char>(block.back()) & 0xC0, 0x80u);  // never inside a character
    }
  }
  EXPECT_EQ(joined, text);
  EXPECT_GE(cut_mid_line, 2);  // the long line, and "last"
  EXPECT_TRUE(
      contains(message_of<DataError>([&] { TextBlocks(dir.file("nope.txt"), "the text"); }), "cannot read the text"));
}

// A file that grows, shrinks or is rewritten while its blocks are read is a DataError naming it at
// its end: its blocks are no snapshot of one version, and meta.json's byte counts would not agree.
TEST(TextBlocks, AFileThatChangesWhileReadIsADataError) {
  TempDir dir;
  const std::string path = dir.file("t.txt");
  const std::string text = std::string(3000, 'a') + "\n" + std::string(3000, 'b') + "\n";
  auto read_all = [&](const std::function<void()>& meanwhile) {
    write_text(path, text);
    TextBlocks blocks(path, "the text to encode", 1000);
    std::string block;
    blocks.next(block);
    meanwhile();
    while (blocks.next(block)) {
    }
  };
  read_all([] {});  // unchanged: no error
  std::string msg = message_of<DataError>([&] { read_all([&] { std::ofstream(path, std::ios::app) << "more\n"; }); });
  EXPECT_TRUE(contains(msg, "the text to encode " + path + " changed while it was read")) << msg;
  EXPECT_TRUE(contains(msg, "6002 bytes when opened")) << msg;
  msg = message_of<DataError>([&] { read_all([&] { ASSERT_EQ(::truncate(path.c_str(), 10), 0); }); });
  EXPECT_TRUE(contains(msg, "10 bytes now")) << msg;
  // The same size, rewritten in place: only the modification time tells.
  msg = message_of<DataError>([&] {
    read_all([&] {
      const struct timespec times[2] = {{0, UTIME_OMIT}, {1000000000, 0}};
      ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
    });
  });
  EXPECT_TRUE(contains(msg, "modified meanwhile")) << msg;
}

TEST(Digest, Sha256AndBase64) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  for (const std::string& s : {std::string(""), std::string("f"), std::string("fo"), std::string("foo"),
                               std::string("foob"), std::string("\0\xff\x10", 3)}) {
    EXPECT_EQ(base64_decode(base64_encode(s)), s);
  }
  EXPECT_EQ(base64_encode("foob"), "Zm9vYg==");
  EXPECT_FALSE(base64_decode("Zm9vYg="));   // not padded to 4
  EXPECT_FALSE(base64_decode("Zm9v!g=="));  // not base64
  EXPECT_FALSE(base64_decode("Zm9vYh=="));  // non-canonical trailing bits
}

// SentencePiece turns each byte that is not UTF-8 into U+FFFD, so the tokenizer refuses such text
// (naming the byte) instead of encoding something that does not decode to it.
TEST(TextCodec, InvalidUtf8IsFoundAndRefusedByTheTokenizer) {
  EXPECT_EQ(invalid_utf8_offset("plain ascii, 中文, 😀"), std::string::npos);
  EXPECT_EQ(invalid_utf8_offset(""), std::string::npos);
  EXPECT_EQ(invalid_utf8_offset("ab\xff"), 2u);            // never a UTF-8 byte
  EXPECT_EQ(invalid_utf8_offset("a\xc3("), 1u);            // a lead byte without its continuation
  EXPECT_EQ(invalid_utf8_offset("\xe4\xb8"), 0u);          // cut short
  EXPECT_EQ(invalid_utf8_offset("x\xc0\xaf"), 1u);         // overlong '/'
  EXPECT_EQ(invalid_utf8_offset("\xed\xa0\x80"), 0u);      // a surrogate
  EXPECT_EQ(invalid_utf8_offset("\xf4\x90\x80\x80"), 0u);  // above U+10FFFF
  EXPECT_EQ(invalid_utf8_offset("\x80"), 0u);              // a lone continuation byte
  const SubwordTokenizer& t = trained("bpe");
  const std::string msg = message_of<ValueError>([&] { t.encode("caf\xe9 au lait"); });
  EXPECT_TRUE(contains(msg, "not valid UTF-8 at byte offset 3 (0xE9)")) << msg;
  EXPECT_TRUE(contains(message_of<ValueError>([&] { t.encode_lines("ok\nbad \xff\n"); }), "byte offset 7"));
}

TEST(TextCodec, DisplayToken) {
  EXPECT_EQ(display_token("ab c"), "ab c");
  EXPECT_EQ(display_token("\n"), "\u21b5");
  EXPECT_EQ(display_token("\t"), "\u2192");
  EXPECT_EQ(display_token("中"), "中");
  EXPECT_EQ(display_token("\xE4"), "<0xE4>");  // a lone part of a character
  EXPECT_EQ(display_token(std::string("\x01", 1)), "<0x01>");
  EXPECT_EQ(display_token("\xF0\x9F\x8E\x89"), "🎉");
}

TEST(CheckpointText, TokenizerMetadataRoundTripsAndRefusesDamage) {
  const SubwordTokenizer& t = trained("bpe");
  std::map<std::string, std::string> meta;
  add_tokenizer_metadata(meta, t);
  EXPECT_EQ(meta.at(kTokenizerShaKey), t.sha256());
  const auto back = tokenizer_from_metadata(meta, "ckpt");
  ASSERT_TRUE(back);
  EXPECT_EQ(back->files().at("tokenizer.model"), t.serialized());
  EXPECT_EQ(text_codec_from_metadata(meta, "ckpt")->size(), t.size());
  EXPECT_FALSE(tokenizer_from_metadata({{"vocab", "[97]"}}, "ckpt"));
  EXPECT_EQ(text_codec_from_metadata({{"vocab", "[97,98]"}}, "ckpt")->size(), 2);

  auto damaged = [&](const std::function<void(std::map<std::string, std::string>&)>& change) {
    std::map<std::string, std::string> m = meta;
    change(m);
    return message_of<CheckpointError>([&] { tokenizer_from_metadata(m, "ckpt"); });
  };
  EXPECT_TRUE(contains(damaged([](auto& m) { m[kTokenizerShaKey] = std::string(64, '0'); }), "not the recorded"));
  EXPECT_TRUE(contains(damaged([](auto& m) { m[kTokenizerKey] = "@@@@"; }), "not base64"));
  EXPECT_TRUE(contains(damaged([](auto& m) { m[kTokenizerKey] = base64_encode("garbage"); }),
                       "not a SentencePiece tokenizer model"));
  EXPECT_TRUE(contains(damaged([](auto& m) { m.erase(kTokenizerShaKey); }), "without \"tokenizer_sha256\""));
}

TEST(ShardTokenizer, FoundBesideTheShardsAndCheckedAgainstMetaJson) {
  const SubwordTokenizer& t = trained("bpe");
  TempDir dir;
  EXPECT_FALSE(find_shard_tokenizer(dir.path().string()));
  write_text(dir.file("tokenizer.model"), t.serialized());
  EXPECT_EQ(find_shard_tokenizer(dir.path().string())->sha256(), t.sha256());
  write_text(dir.file("meta.json"), "{\"tokenizer_sha256\": \"" + t.sha256() + "\"}");
  EXPECT_EQ(find_shard_tokenizer(dir.path().string())->sha256(), t.sha256());
  write_text(dir.file("meta.json"), "{\"tokenizer_sha256\": \"" + std::string(64, 'a') + "\"}");
  EXPECT_TRUE(
      contains(message_of<DataError>([&] { find_shard_tokenizer(dir.path().string()); }), "do not belong together"));
  fs::remove(dir.file("tokenizer.model"));
  EXPECT_TRUE(contains(message_of<DataError>([&] { find_shard_tokenizer(dir.path().string()); }), "is missing"));
  write_text(dir.file("meta.json"), "[1, 2");
  EXPECT_TRUE(contains(message_of<DataError>([&] { find_shard_tokenizer(dir.path().string()); }), "not a JSON object"));
}

TEST(StagedDirectory, AppearsWholeOrNotAtAll) {
  TempDir dir;
  const std::string out = dir.file("out");
  {
    StagedDirectory staged(out, false, "--out");
    write_text(staged.file("a").string(), "1");
    EXPECT_FALSE(fs::exists(out));
  }  // not committed: nothing left behind
  EXPECT_FALSE(fs::exists(out));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 0);
  {
    StagedDirectory staged(out + "/", false, "--out");
    write_text(staged.file("a").string(), "1");
    staged.commit();
  }
  EXPECT_EQ(read_file(out + "/a"), "1");
  EXPECT_TRUE(contains(message_of<OutputPathError>([&] { StagedDirectory(out, false, "--out"); }), "--force"));
  const OutputDirectoryKind kind{"test", {"a"}, [](const std::string& name) { return name == "a" || name == "b"; }};
  {
    StagedDirectory staged(out, true, "--out", kind);
    write_text(staged.file("b").string(), "2");
    staged.commit();
  }
  EXPECT_FALSE(fs::exists(out + "/a"));  // replaced whole
  EXPECT_EQ(read_file(out + "/b"), "2");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1);
  write_text(dir.file("file"), "x");
  EXPECT_TRUE(contains(message_of<OutputPathError>([&] { StagedDirectory(dir.file("file"), true, "--out"); }),
                       "not a directory"));
}

TEST(ProgressBar, Render) {
  EXPECT_EQ(recipes::ProgressBar::render(0, 100, 0), "[........................]   0%  0.0 B/s");
  EXPECT_EQ(recipes::ProgressBar::render(50'000'000, 100'000'000, 10),
            "[############............]  50%  5.0 MB/s  ETA 0:10");
  EXPECT_EQ(recipes::ProgressBar::render(100, 100, 1), "[########################] 100%  100.0 B/s");
}

}  // namespace
}  // namespace gattn
