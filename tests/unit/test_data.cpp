// Datasets: char-level text (vocab, split, windows, docs/cli.md's eval windows), llm.c token shards
// (round trip and damaged headers), synthetic tasks (structure, determinism), answer accuracy.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "framework/data/dataset.h"
#include "test_util.h"

namespace gattn {
namespace {

using test::error_of;
using test::TempDir;
using test::write_text;

std::vector<std::int32_t> ints(const Tensor& t) {
  const std::int32_t* p = t.data<std::int32_t>();
  return std::vector<std::int32_t>(p, p + t.numel());
}

// "DataError: <message>" when f throws a DataError, so tests check type and message in one go.
std::string data_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const DataError& e) {
    return std::string("DataError: ") + e.what();
  } catch (const Error& e) {
    return std::string("other Error: ") + e.what();
  }
  return "";
}

DataOptions text_options(const std::string& path) {
  DataOptions o;
  o.kind = "text";
  o.path = path;
  return o;
}

// 100 bytes over the alphabet "abcde\n": 90 train, 10 val.
std::string small_text() {
  std::string s;
  for (int i = 0; i < 100; ++i) s.push_back(i % 17 == 16 ? '\n' : static_cast<char>('a' + (i * 7) % 5));
  return s;
}

std::int32_t id_of(char c) {  // ids of small_text's sorted vocab "\nabcde"
  return c == '\n' ? 0 : 1 + (c - 'a');
}

TEST(TextDataset, VocabAndSplitExact) {
  TempDir dir;
  const std::string text = small_text();
  write_text(dir.file("t.txt"), text);
  auto ds = make_dataset(text_options(dir.file("t.txt")), 4);
  EXPECT_EQ(ds->vocab_size(), 6);
  EXPECT_EQ(ds->vocab_json(), "[10,97,98,99,100,101]");
  EXPECT_FALSE(ds->reports_accuracy());
  EXPECT_NE(ds->describe().find("90 train / 10 val"), std::string::npos) << ds->describe();
  // Val = bytes [90, 100): with T = 9 exactly one window of 10 tokens, starting at byte 90.
  ASSERT_EQ(ds->eval_windows(9, 0), 1);
  Batch b = ds->eval_batch(0, 1, 9);
  for (int t = 0; t < 9; ++t) {
    EXPECT_EQ(b.x.data<std::int32_t>()[t], id_of(text[static_cast<std::size_t>(90 + t)]));
    EXPECT_EQ(b.y.data<std::int32_t>()[t], id_of(text[static_cast<std::size_t>(91 + t)]));
  }
}

TEST(TextDataset, TrainWindowsInRangeAndShifted) {
  TempDir dir;
  // Distinct bytes per position make every token's position recoverable.
  std::string text;
  for (int i = 0; i < 200; ++i) text.push_back(static_cast<char>(32 + i));
  write_text(dir.file("t.txt"), text);
  auto ds = make_dataset(text_options(dir.file("t.txt")), 16);
  ASSERT_EQ(ds->vocab_size(), 200);
  Generator gen(7);
  Batch b = ds->sample_train(64, 16, gen);
  ASSERT_EQ(b.x.shape(), (Shape{64, 16}));
  ASSERT_EQ(b.y.shape(), (Shape{64, 16}));
  auto x = ints(b.x), y = ints(b.y);
  std::set<std::int32_t> starts;
  for (int r = 0; r < 64; ++r) {
    const std::int32_t s = x[static_cast<std::size_t>(r * 16)];
    starts.insert(s);
    EXPECT_GE(s, 0);
    EXPECT_LE(s, 180 - 16 - 1);  // n_train = 180; y's last token stays in the train split
    for (int t = 0; t < 16; ++t) {
      EXPECT_EQ(x[static_cast<std::size_t>(r * 16 + t)], s + t);
      EXPECT_EQ(y[static_cast<std::size_t>(r * 16 + t)], s + t + 1);
    }
  }
  EXPECT_GT(starts.size(), 20u);  // actually random
}

TEST(TextDataset, SameGeneratorStateSameBatch) {
  TempDir dir;
  write_text(dir.file("t.txt"), small_text());
  auto ds = make_dataset(text_options(dir.file("t.txt")), 8);
  Generator gen(3);
  ds->sample_train(4, 8, gen);  // advance, then replay from a saved state (resume)
  const GeneratorState saved = gen.state();
  Batch a = ds->sample_train(4, 8, gen);
  Generator other;
  other.set_state(saved);
  Batch b = ds->sample_train(4, 8, other);
  EXPECT_EQ(ints(a.x), ints(b.x));
  EXPECT_EQ(ints(a.y), ints(b.y));
  EXPECT_EQ(gen.state().offset, other.state().offset);
  Batch c = ds->sample_train(4, 8, gen);
  EXPECT_NE(ints(a.x), ints(c.x));
}

TEST(TextDataset, EvalWindowsFollowSpec) {
  TempDir dir;
  // 1000 bytes: val = bytes [900, 1000), 100 tokens. Bytes cycle over 100 values, so val token i has
  // byte value 32 + i % 100 and (all 100 bytes being present) id i % 100.
  std::string text;
  for (int i = 0; i < 1000; ++i) text.push_back(static_cast<char>(32 + i % 100));
  write_text(dir.file("t.txt"), text);
  auto ds = make_dataset(text_options(dir.file("t.txt")), 10);
  // Windows of 11 tokens at 0, 10, ..., 80 fit (80 + 10 = 90 <= 99); the one at 90 would need token 100.
  EXPECT_EQ(ds->eval_windows(10, 0), 9);
  EXPECT_EQ(ds->eval_windows(10, 4), 4);
  EXPECT_EQ(ds->eval_windows(10, 50), 9);
  EXPECT_EQ(ds->eval_windows(11, 0), 9);  // 99 / 11: the window at 88 ends at token 99
  EXPECT_EQ(ds->eval_windows(33, 0), 3);  // 0, 33, 66: 66 + 33 = 99
  Batch b = ds->eval_batch(2, 3, 10);
  ASSERT_EQ(b.x.shape(), (Shape{3, 10}));
  for (int r = 0; r < 3; ++r)
    for (int t = 0; t < 10; ++t) {
      const int start = (2 + r) * 10;
      EXPECT_EQ(b.x.data<std::int32_t>()[r * 10 + t], (start + t) % 100);
      EXPECT_EQ(b.y.data<std::int32_t>()[r * 10 + t], (start + t + 1) % 100);
    }
  // Deterministic, and the same windows whichever batch asks for them.
  Batch all = ds->eval_batch(0, 9, 10);
  const auto all_x = ints(all.x);
  EXPECT_EQ(std::vector<std::int32_t>(all_x.begin() + 20, all_x.begin() + 50), ints(b.x));
  EXPECT_NE(error_of([&] { ds->eval_batch(8, 2, 10); }), "");
}

TEST(TextDataset, MissingFileIsDataError) {
  TempDir dir;
  const std::string path = dir.file("nope.txt");
  std::string msg = data_error_of([&] { make_dataset(text_options(path), 8); });
  EXPECT_EQ(msg.rfind("DataError", 0), 0u) << msg;
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
}

TEST(TextDataset, EmptyFileIsDataError) {
  TempDir dir;
  write_text(dir.file("empty.txt"), "");
  std::string msg = data_error_of([&] { make_dataset(text_options(dir.file("empty.txt")), 8); });
  EXPECT_EQ(msg.rfind("DataError", 0), 0u) << msg;
  EXPECT_NE(msg.find(dir.file("empty.txt")), std::string::npos) << msg;
  EXPECT_NE(msg.find("empty"), std::string::npos) << msg;
}

TEST(TextDataset, DirectoryIsDataError) {
  TempDir dir;
  std::string msg = data_error_of([&] { make_dataset(text_options(dir.path().string()), 8); });
  EXPECT_EQ(msg.rfind("DataError", 0), 0u) << msg;
}

TEST(TextDataset, BlockLargerThanValSplitIsDataError) {
  TempDir dir;
  std::string text(1000, 'x');
  write_text(dir.file("t.txt"), text);
  std::string msg = data_error_of([&] { make_dataset(text_options(dir.file("t.txt")), 256); });
  EXPECT_EQ(msg, "DataError: block_size 256 is larger than the validation split (100 tokens) of " + dir.file("t.txt") +
                     ": a window needs block_size + 1 tokens");
  // 100 val tokens hold one window of T = 99 but not of T = 100.
  EXPECT_NO_THROW(make_dataset(text_options(dir.file("t.txt")), 99));
  EXPECT_NE(data_error_of([&] { make_dataset(text_options(dir.file("t.txt")), 100); }), "");
}

TEST(TextDataset, BlockLargerThanTrainSplitIsDataError) {
  TempDir dir;
  write_text(dir.file("t.txt"), small_text());
  std::string msg = data_error_of([&] { make_dataset(text_options(dir.file("t.txt")), 95); });
  EXPECT_EQ(msg.rfind("DataError: block_size 95 is larger than the training split (90 tokens)", 0), 0u) << msg;
}

TEST(TextDataset, TinyShakespeare) {
  // The copy the repository ships for its configs.
  const std::string path = std::string(GATTN_SOURCE_DIR) + "/data/tinyshakespeare.txt";
  ASSERT_TRUE(std::filesystem::exists(path)) << path;
  const auto n = static_cast<std::int64_t>(std::filesystem::file_size(path));
  auto ds = make_dataset(text_options(path), 256);
  EXPECT_EQ(ds->vocab_size(), 65);
  const std::int64_t n_train = n * 9 / 10, n_val = n - n_train;
  EXPECT_NE(ds->describe().find(std::to_string(n_train) + " train / " + std::to_string(n_val) + " val"),
            std::string::npos)
      << ds->describe();
  EXPECT_EQ(ds->eval_windows(256, 0), (n_val - 1) / 256);
  EXPECT_EQ(ds->vocab_json().rfind("[10,32,33,", 0), 0u);
  Generator gen(1);
  Batch b = ds->sample_train(2, 256, gen);
  for (auto v : ints(b.x)) {
    EXPECT_GE(v, 0);
    EXPECT_LT(v, 65);
  }
}

// ---- llm.c token shards ----

void write_shard(const std::string& path, const std::vector<std::uint16_t>& tokens, std::int32_t magic = 20240520,
                 std::int32_t version = 1, std::int64_t claimed = -1) {
  std::vector<std::int32_t> header(256, 0);
  header[0] = magic;
  header[1] = version;
  header[2] = static_cast<std::int32_t>(claimed >= 0 ? claimed : static_cast<std::int64_t>(tokens.size()));
  std::ofstream out(path, std::ios::binary);
  // The test machines are little-endian, like the format.
  out.write(reinterpret_cast<const char*>(header.data()), 1024);
  out.write(reinterpret_cast<const char*>(tokens.data()), static_cast<std::streamsize>(2 * tokens.size()));
}

DataOptions token_options(const std::string& path) {
  DataOptions o;
  o.kind = "tokens";
  o.path = path;
  return o;
}

std::vector<std::uint16_t> iota_tokens(std::uint16_t from, std::size_t n) {
  std::vector<std::uint16_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint16_t>(from + i);
  return v;
}

TEST(TokensDataset, ReadsShardsFromDirectoryAndGlob) {
  TempDir dir;
  write_shard(dir.file("fw_train_000001.bin"), iota_tokens(100, 50));
  write_shard(dir.file("fw_train_000000.bin"), iota_tokens(0, 50));
  write_shard(dir.file("fw_val_000000.bin"), iota_tokens(1000, 40));
  write_text(dir.file("README.txt"), "not a shard");
  for (const std::string& path : {dir.path().string(), dir.file("fw_*.bin")}) {
    auto ds = make_dataset(token_options(path), 8);
    EXPECT_EQ(ds->vocab_size(), 1040);
    EXPECT_EQ(ds->vocab_json(), "");
    EXPECT_NE(ds->describe().find("100 train / 40 val tokens"), std::string::npos) << ds->describe();
    // Val windows: 39 / 8 = 4, starting at 0, 8, 16, 24.
    ASSERT_EQ(ds->eval_windows(8, 0), 4);
    Batch e = ds->eval_batch(3, 1, 8);
    EXPECT_EQ(e.x.data<std::int32_t>()[0], 1024);
    EXPECT_EQ(e.y.data<std::int32_t>()[7], 1032);
    // Train shards concatenate in name order: 0..49 then 100..149.
    Generator gen(5);
    Batch b = ds->sample_train(32, 8, gen);
    auto x = ints(b.x), y = ints(b.y);
    for (std::size_t i = 0; i < x.size(); ++i) {
      const bool first = x[i] < 50;
      EXPECT_TRUE(first || (x[i] >= 100 && x[i] < 150)) << x[i];
      EXPECT_TRUE(y[i] == x[i] + 1 || (x[i] == 49 && y[i] == 100)) << x[i] << " -> " << y[i];
    }
  }
}

TEST(TokensDataset, VocabSizeOption) {
  TempDir dir;
  write_shard(dir.file("a_train.bin"), iota_tokens(0, 30));
  write_shard(dir.file("a_val.bin"), iota_tokens(0, 30));
  DataOptions o = token_options(dir.path().string());
  o.vocab_size = 50257;
  EXPECT_EQ(make_dataset(o, 8)->vocab_size(), 50257);
  o.vocab_size = 20;
  std::string msg = data_error_of([&] { make_dataset(o, 8); });
  EXPECT_EQ(msg.rfind("DataError", 0), 0u) << msg;
}

void expect_shard_error(const std::function<void(const std::string&)>& write_bad, const std::string& needle) {
  TempDir dir;
  write_shard(dir.file("x_train.bin"), iota_tokens(0, 30));
  write_bad(dir.file("x_val.bin"));
  std::string msg = data_error_of([&] { make_dataset(token_options(dir.path().string()), 8); });
  EXPECT_EQ(msg.rfind("DataError", 0), 0u) << msg;
  EXPECT_NE(msg.find(dir.file("x_val.bin")), std::string::npos) << msg;
  EXPECT_NE(msg.find(needle), std::string::npos) << msg;
}

TEST(TokensDataset, BadMagic) {
  expect_shard_error([](const std::string& p) { write_shard(p, iota_tokens(0, 30), 20240519); }, "magic");
}

TEST(TokensDataset, BadVersion) {
  expect_shard_error([](const std::string& p) { write_shard(p, iota_tokens(0, 30), 20240520, 3); }, "version");
}

TEST(TokensDataset, TruncatedTokens) {
  expect_shard_error([](const std::string& p) { write_shard(p, iota_tokens(0, 30), 20240520, 1, 31); }, "promises 31");
}

TEST(TokensDataset, TruncatedHeader) {
  expect_shard_error([](const std::string& p) { write_text(p, std::string(100, '\0')); }, "truncated");
}

TEST(TokensDataset, MissingSplitsAndFiles) {
  TempDir dir;
  std::string msg = data_error_of([&] { make_dataset(token_options(dir.file("*.bin")), 8); });
  EXPECT_EQ(msg.rfind("DataError", 0), 0u) << msg;
  EXPECT_NE(msg.find(dir.file("*.bin")), std::string::npos) << msg;
  write_shard(dir.file("only_train.bin"), iota_tokens(0, 30));
  msg = data_error_of([&] { make_dataset(token_options(dir.path().string()), 8); });
  EXPECT_NE(msg.find("validation"), std::string::npos) << msg;
  write_shard(dir.file("only_val.bin"), iota_tokens(0, 5));
  msg = data_error_of([&] { make_dataset(token_options(dir.path().string()), 8); });
  EXPECT_NE(msg.find("block_size 8 is larger than the validation split (5 tokens)"), std::string::npos) << msg;
}

// ---- synthetic tasks ----

DataOptions synthetic_options(const std::string& task) {
  DataOptions o;
  o.kind = "synthetic";
  o.task = task;
  o.seed = 11;
  return o;
}

TEST(SyntheticDataset, CopyStructure) {
  DataOptions o = synthetic_options("copy");
  o.n_pairs = 5;
  auto ds = make_dataset(o, 16);  // 5 tokens, separator, 5 copies, 6 pads = 17
  EXPECT_TRUE(ds->reports_accuracy());
  EXPECT_EQ(ds->vocab_size(), 35);
  Generator gen(2);
  Batch b = ds->sample_train(8, 16, gen);
  for (int r = 0; r < 8; ++r) {
    const std::int32_t* x = b.x.data<std::int32_t>() + r * 16;
    const std::int32_t* y = b.y.data<std::int32_t>() + r * 16;
    for (int i = 0; i < 5; ++i) {
      EXPECT_GE(x[i], 3);
      EXPECT_LT(x[i], 35);
    }
    EXPECT_EQ(x[5], 1);
    for (int i = 0; i < 5; ++i) {
      EXPECT_EQ(x[6 + i], x[i]);  // the copied half equals the first half
      EXPECT_EQ(y[5 + i], x[i]);  // the target of each copy position is the token to copy
    }
    for (int t = 0; t < 16; ++t)
      if (t < 5 || t >= 10) {
        EXPECT_EQ(y[t], -1) << t;
      }
    for (int t = 11; t < 16; ++t) EXPECT_EQ(x[t], 0);
  }
}

// Checks one recall row: pairs (skipping distractors), query marker, key, and the single target.
void check_recall_row(const std::int32_t* x, const std::int32_t* y, std::int64_t T, std::int64_t pairs,
                      std::int64_t first_distractor, std::int64_t* distractors_seen) {
  std::vector<std::int32_t> keys, values;
  std::int64_t t = 0;
  while (static_cast<std::int64_t>(keys.size()) < pairs) {
    if (x[t] >= first_distractor) {
      ++*distractors_seen;
      ++t;
      continue;
    }
    keys.push_back(x[t]);
    values.push_back(x[t + 1]);
    t += 2;
  }
  while (x[t] >= first_distractor) ++*distractors_seen, ++t;
  ASSERT_EQ(x[t], 2) << "query marker at " << t;
  const std::int32_t key = x[t + 1];
  const auto it = std::find(keys.begin(), keys.end(), key);
  ASSERT_NE(it, keys.end());
  EXPECT_EQ(std::set<std::int32_t>(keys.begin(), keys.end()).size(), keys.size()) << "keys distinct";
  for (std::int64_t i = 0; i < T; ++i) {
    if (i == t + 1) {
      EXPECT_EQ(y[i], values[static_cast<std::size_t>(it - keys.begin())]);
    } else {
      EXPECT_EQ(y[i], -1) << i;
    }
  }
  if (t + 2 < T) {
    EXPECT_EQ(x[t + 2], y[t + 1]);  // the answer token itself, then padding
  }
  for (std::int64_t i = t + 3; i < T; ++i) EXPECT_EQ(x[i], 0);
}

TEST(SyntheticDataset, AssocRecallStructure) {
  DataOptions o = synthetic_options("assoc_recall");
  o.n_pairs = 6;
  auto ds = make_dataset(o, 20);
  Generator gen(4);
  Batch b = ds->sample_train(32, 20, gen);
  std::int64_t distractors = 0;
  for (int r = 0; r < 32; ++r)
    check_recall_row(b.x.data<std::int32_t>() + r * 20, b.y.data<std::int32_t>() + r * 20, 20, 6, ds->vocab_size(),
                     &distractors);
  EXPECT_EQ(distractors, 0);
  // 6 pairs + query + key + answer = 15 tokens: the answer is the target at position 13.
  EXPECT_EQ(b.y.data<std::int32_t>()[13], b.x.data<std::int32_t>()[14]);
}

TEST(SyntheticDataset, NoisyRecallStructure) {
  DataOptions o = synthetic_options("noisy_recall");
  o.n_pairs = 4;
  o.n_distractors = 10;
  auto ds = make_dataset(o, 32);
  EXPECT_EQ(ds->vocab_size(), 51);
  Generator gen(6);
  Batch b = ds->sample_train(32, 32, gen);
  std::int64_t distractors = 0;
  const std::int64_t first_distractor = 3 + 32;
  for (int r = 0; r < 32; ++r)
    check_recall_row(b.x.data<std::int32_t>() + r * 32, b.y.data<std::int32_t>() + r * 32, 32, 4, first_distractor,
                     &distractors);
  EXPECT_EQ(distractors, 32 * 10);
  for (auto v : ints(b.x)) EXPECT_LT(v, 51);
  // Default distractor count fills the block.
  auto filled = make_dataset(synthetic_options("noisy_recall"), 64);
  EXPECT_NE(filled->describe().find("8 pairs, 46 distractors"), std::string::npos) << filled->describe();
}

TEST(SyntheticDataset, DeterministicAndValIndependentOfTraining) {
  auto ds = make_dataset(synthetic_options("noisy_recall"), 32);
  Generator g1(9), g2(9);
  EXPECT_EQ(ints(ds->sample_train(4, 32, g1).x), ints(ds->sample_train(4, 32, g2).x));
  EXPECT_EQ(g1.state().offset, g2.state().offset);
  EXPECT_EQ(ds->eval_windows(32, 0), 256);
  EXPECT_EQ(ds->eval_windows(32, 10), 10);
  Batch v1 = ds->eval_batch(0, 6, 32);
  Generator g3(123);
  for (int i = 0; i < 5; ++i) ds->sample_train(8, 32, g3);
  Batch v2 = ds->eval_batch(0, 6, 32);
  EXPECT_EQ(ints(v1.x), ints(v2.x));
  EXPECT_EQ(ints(v1.y), ints(v2.y));
  // Window i is the same sequence whichever batch it comes in.
  Batch part = ds->eval_batch(4, 2, 32);
  const auto v1_x = ints(v1.x);
  EXPECT_EQ(std::vector<std::int32_t>(v1_x.begin() + 4 * 32, v1_x.end()), ints(part.x));
  // A different seed gives a different val set; val differs from training draws.
  DataOptions other = synthetic_options("noisy_recall");
  other.seed = 12;
  EXPECT_NE(ints(make_dataset(other, 32)->eval_batch(0, 6, 32).x), ints(v1.x));
  Generator g4(11);
  EXPECT_NE(ints(ds->sample_train(6, 32, g4).x), ints(v1.x));
}

TEST(SyntheticDataset, Errors) {
  DataOptions o = synthetic_options("assoc_recall");
  o.n_pairs = 20;
  std::string msg = data_error_of([&] { make_dataset(o, 16); });
  EXPECT_EQ(msg.rfind("DataError", 0), 0u) << msg;
  EXPECT_NE(msg.find("block_size 16"), std::string::npos) << msg;
  o.n_pairs = 40;  // fits 128 but not 32 distinct keys
  EXPECT_NE(data_error_of([&] { make_dataset(o, 128); }).find("distinct keys"), std::string::npos);
  EXPECT_EQ(data_error_of([&] { make_dataset(synthetic_options("shuffle"), 16); }).rfind("DataError", 0), 0u);
  DataOptions bad_kind;
  bad_kind.kind = "images";
  EXPECT_EQ(data_error_of([&] { make_dataset(bad_kind, 16); }).rfind("DataError", 0), 0u);
}

TEST(DataAccuracy, AnswerAccuracyOnHandMadeLogits) {
  // B = 1, T = 4, V = 3; targets at positions 0, 2, 3 (position 1 ignored).
  Batch b{Tensor::from_ints({0, 0, 0, 0}, {1, 4}), Tensor::from_ints({2, -1, 0, 1}, {1, 4})};
  Tensor logits = Tensor::from({0.1, 0.2, 0.9,    // argmax 2: right
                                5.0, 0.0, 0.0,    // ignored
                                0.0, 1.0, 0.5,    // argmax 1: wrong (target 0)
                                -1.0, 3.0, 2.0},  // argmax 1: right
                               {1, 4, 3});
  EXPECT_DOUBLE_EQ(Dataset::answer_accuracy(logits, b), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(Dataset::answer_accuracy(logits.to(DType::f64), b), 2.0 / 3.0);
  Batch none{b.x, Tensor::from_ints({-1, -1, -1, -1}, {1, 4})};
  EXPECT_DOUBLE_EQ(Dataset::answer_accuracy(logits, none), 0.0);
  EXPECT_NE(error_of([&] { Dataset::answer_accuracy(Tensor::zeros({1, 3, 3}), b); }), "");
}

}  // namespace
}  // namespace gattn
