// Memory-mapped llm.c token shards (framework/data/token_shards.h): the mapped stream is exactly the
// concatenation of the shards, so training and eval windows equal those of an in-memory copy even
// where they cross shard boundaries (empty shards and shards shorter than a window included); every
// header and every token id is checked when the dataset is made.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "framework/data/dataset.h"
#include "framework/data/token_shard_writer.h"
#include "framework/data/token_shards.h"
#include "framework/data/windowed_dataset.h"
#include "test_util.h"

namespace gattn {
namespace {

using data_detail::TokenShards;
using data_detail::TokenVector;
using test::contains;
using test::message_of;
using test::TempDir;

// Writes an llm.c shard: the header's fields as given, then the tokens, then `extra` bytes.
void write_shard(const std::string& path, const std::vector<std::uint16_t>& tokens, std::int32_t magic = 20240520,
                 std::int32_t version = 1, std::int64_t claimed = -1, std::size_t extra = 0) {
  std::vector<std::int32_t> header(256, 0);
  header[0] = magic;
  header[1] = version;
  header[2] = static_cast<std::int32_t>(claimed != -1 ? claimed : static_cast<std::int64_t>(tokens.size()));
  std::ofstream out(path, std::ios::binary);
  // The test machines are little-endian, like the format.
  out.write(reinterpret_cast<const char*>(header.data()), 1024);
  out.write(reinterpret_cast<const char*>(tokens.data()), static_cast<std::streamsize>(2 * tokens.size()));
  out << std::string(extra, '\0');
}

// n ids below `below` from a fixed LCG: no two neighbouring shards look alike.
std::vector<std::uint16_t> lcg_tokens(std::size_t n, std::uint32_t seed, std::uint32_t below = 65536) {
  std::vector<std::uint16_t> v(n);
  std::uint32_t s = seed * 2654435761u + 1;
  for (auto& t : v) {
    s = s * 1664525u + 1013904223u;
    t = static_cast<std::uint16_t>((s >> 8) % below);
  }
  return v;
}

DataOptions token_options(const std::string& path, std::int64_t vocab = 0) {
  DataOptions o;
  o.kind = "tokens";
  o.path = path;
  o.vocab_size = vocab;
  return o;
}

std::vector<std::int32_t> ints(const Tensor& t) {
  const std::int32_t* p = t.data<std::int32_t>();
  return std::vector<std::int32_t>(p, p + t.numel());
}

// A draw from gen: equal draws from two generators say they were left in the same state.
std::int64_t next_draw(Generator& gen) { return data_detail::random_index(gen, std::int64_t{1} << 30); }

// The same splits held in memory, windows cut by the same WindowedDataset code: the reference.
class InMemoryTokens : public data_detail::WindowedDataset {
 public:
  InMemoryTokens(std::vector<std::uint16_t> train, std::vector<std::uint16_t> val) {
    source_ = "memory";
    train_ = std::make_unique<TokenVector>(std::move(train));
    val_ = std::make_unique<TokenVector>(std::move(val));
  }
  std::int64_t vocab_size() const override { return 65536; }
  std::string describe() const override { return source_; }
};

// Shard sizes chosen so that windows of 16 tokens cross boundaries all the time: empty shards, shards
// of one token and shards shorter than a window between longer ones.
const std::vector<std::size_t> kTrainSizes = {0, 37, 5, 0, 100, 1, 16, 0, 64, 23, 3, 0};
const std::vector<std::size_t> kValSizes = {10, 0, 50, 3, 17, 1, 40, 0};

// Writes the shards into dir and returns each split's concatenation.
std::pair<std::vector<std::uint16_t>, std::vector<std::uint16_t>> write_split_shards(const TempDir& dir) {
  std::vector<std::uint16_t> train, val;
  for (std::size_t i = 0; i < kTrainSizes.size(); ++i) {
    auto t = lcg_tokens(kTrainSizes[i], static_cast<std::uint32_t>(i));
    write_shard(dir.file("shard_train_" + std::to_string(100 + i) + ".bin"), t);
    train.insert(train.end(), t.begin(), t.end());
  }
  for (std::size_t i = 0; i < kValSizes.size(); ++i) {
    auto t = lcg_tokens(kValSizes[i], static_cast<std::uint32_t>(1000 + i));
    write_shard(dir.file("shard_val_" + std::to_string(100 + i) + ".bin"), t);
    val.insert(val.end(), t.begin(), t.end());
  }
  return {train, val};
}

TEST(TokenShards, CopyEveryRangeEqualsTheConcatenation) {
  TempDir dir;
  std::vector<std::string> files;
  std::vector<std::uint16_t> all;
  for (std::size_t i = 0; i < kTrainSizes.size(); ++i) {
    auto t = lcg_tokens(kTrainSizes[i], static_cast<std::uint32_t>(i));
    // Appended rather than "s" + std::to_string(i): GCC 12 at -O3 warns (-Wrestrict, a false positive) on
    // the inlined insert at the front of the string.
    std::string name = "s";
    name.append(std::to_string(i)).append(".bin");
    files.push_back(dir.file(name));
    write_shard(files.back(), t);
    all.insert(all.end(), t.begin(), t.end());
  }
  TokenShards shards(files, TokenShards::Access::random);
  const auto n = static_cast<std::int64_t>(all.size());
  ASSERT_EQ(shards.size(), n);
  EXPECT_EQ(shards.shard_count(), files.size());
  std::vector<std::int32_t> out(all.size() + 1);
  for (std::int64_t start = 0; start <= n; ++start)
    for (std::int64_t len = 0; start + len <= n; ++len) {
      out[static_cast<std::size_t>(len)] = -7;  // a guard: copy writes exactly len tokens
      shards.copy(start, len, out.data());
      ASSERT_EQ(out[static_cast<std::size_t>(len)], -7) << start << " " << len;
      for (std::int64_t i = 0; i < len; ++i)
        ASSERT_EQ(out[static_cast<std::size_t>(i)], all[static_cast<std::size_t>(start + i)]) << start << " " << len;
    }
  EXPECT_FALSE(message_of<ValueError>([&] { shards.copy(n - 3, 4, out.data()); }).empty());
  EXPECT_FALSE(message_of<ValueError>([&] { shards.copy(-1, 1, out.data()); }).empty());
}

TEST(TokenShards, WindowsEqualThoseOfAnInMemoryStream) {
  TempDir dir;
  auto [train, val] = write_split_shards(dir);
  auto mapped = make_dataset(token_options(dir.path().string()), 16);
  InMemoryTokens memory(train, val);
  for (std::int64_t T : {1, 7, 16}) {
    // Training batches: the same generator state gives the same windows, and leaves the generator in
    // the same state.
    Generator g_mapped(42), g_memory(42);
    for (int step = 0; step < 20; ++step) {
      Batch a = mapped->sample_train(12, T, g_mapped);
      Batch b = memory.sample_train(12, T, g_memory);
      ASSERT_EQ(ints(a.x), ints(b.x)) << "T " << T << " step " << step;
      ASSERT_EQ(ints(a.y), ints(b.y)) << "T " << T << " step " << step;
    }
    EXPECT_EQ(next_draw(g_mapped), next_draw(g_memory));
    // Every eval window, in one batch and one at a time.
    const std::int64_t windows = mapped->eval_windows(T, 0);
    ASSERT_EQ(windows, memory.eval_windows(T, 0));
    ASSERT_EQ(windows, (static_cast<std::int64_t>(val.size()) - 1) / T);
    Batch a = mapped->eval_batch(0, windows, T), b = memory.eval_batch(0, windows, T);
    EXPECT_EQ(ints(a.x), ints(b.x)) << "T " << T;
    EXPECT_EQ(ints(a.y), ints(b.y)) << "T " << T;
    for (std::int64_t w = 0; w < windows; ++w)
      EXPECT_EQ(ints(mapped->eval_batch(w, 1, T).y), ints(memory.eval_batch(w, 1, T).y)) << "T " << T << " w " << w;
  }
}

TEST(TokenShards, DescribesShardsAndSplits) {
  TempDir dir;
  auto [train, val] = write_split_shards(dir);
  auto ds = make_dataset(token_options(dir.path().string()), 16);
  EXPECT_TRUE(contains(ds->describe(), "12 train / 8 val shards")) << ds->describe();
  EXPECT_TRUE(contains(ds->describe(),
                       std::to_string(train.size()) + " train / " + std::to_string(val.size()) + " val tokens"));
}

// ---- checks when the dataset is made ----

// The DataError of making a dataset over dir, with the file it must name.
std::string data_error(const TempDir& dir, std::int64_t vocab = 0) {
  return message_of<DataError>([&] { make_dataset(token_options(dir.path().string(), vocab), 8); });
}

// A good train shard beside a val shard that write_bad damages: the message names the val shard.
void expect_bad_val_shard(const std::function<void(const std::string&)>& write_bad, const std::string& needle) {
  TempDir dir;
  write_shard(dir.file("x_train.bin"), lcg_tokens(30, 1));
  write_bad(dir.file("x_val.bin"));
  const std::string msg = data_error(dir);
  EXPECT_TRUE(contains(msg, "token shard " + dir.file("x_val.bin")));
  EXPECT_TRUE(contains(msg, needle));
}

// Vocabularies past 65,536 ids (Llama 3's, Qwen's) are written as version 2, uint32 ids, and read back
// exactly, across shard boundaries; smaller ones stay llm.c's version 1.
TEST(TokenShardWriter, WideIdsRoundTrip) {
  TempDir dir;
  std::vector<std::int32_t> ids(250);
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<std::int32_t>((i * 7919 + 3) % 151936);
  ids[7] = 151935;
  TokenShardWriter wide(dir.path(), "train", 100, 151936);
  wide.append(ids);
  ASSERT_EQ(wide.finish().size(), 3u);
  std::vector<std::string> files;
  for (int i = 0; i < 3; ++i) files.push_back(dir.file("train_00000" + std::to_string(i) + ".bin"));
  EXPECT_EQ(std::filesystem::file_size(files[0]), 1024u + 4u * 100u);
  data_detail::TokenShards shards(files, data_detail::TokenShards::Access::sequential);
  std::vector<std::int32_t> back(ids.size());
  shards.copy(0, static_cast<std::int64_t>(ids.size()), back.data());
  EXPECT_EQ(back, ids);
  EXPECT_EQ(shards.scan_ids(0), 151935);
  EXPECT_TRUE(contains(message_of<DataError>([&] { shards.scan_ids(151000); }),
                       "holds token id 151935 at token 7 (byte offset 1052)"));

  TempDir small;
  TokenShardWriter narrow(small.path(), "val", 1000, 65536);
  narrow.append({0, 65535, 12});
  narrow.finish();
  EXPECT_EQ(std::filesystem::file_size(small.file("val_000000.bin")), 1024u + 2u * 3u);
}

TEST(TokenShardChecks, BadHeaders) {
  const auto tokens = lcg_tokens(30, 2);
  expect_bad_val_shard([&](const std::string& p) { write_shard(p, tokens, 20240519); },
                       "has bad magic 20240519 (expected 20240520)");
  expect_bad_val_shard([&](const std::string& p) { write_shard(p, tokens, 20240520, 3); },
                       "has unsupported version 3 (expected 1, uint16 ids, or 2, uint32 ids)");
  // Version 2 holds 4 bytes an id: 30 uint16 ids are half the data its header promises.
  expect_bad_val_shard([&](const std::string& p) { write_shard(p, tokens, 20240520, 2); },
                       "is 1084 bytes but its header promises 30 tokens (1144 bytes)");
  expect_bad_val_shard([&](const std::string& p) { write_shard(p, tokens, 20240520, 1, -5); },
                       "has a negative token count -5");
  expect_bad_val_shard([](const std::string& p) { test::write_text(p, ""); },
                       "is truncated: 0 bytes, shorter than the 1024-byte header");
  expect_bad_val_shard([](const std::string& p) { test::write_text(p, std::string(1023, '\0')); },
                       "is truncated: 1023 bytes, shorter than the 1024-byte header");
}

TEST(TokenShardChecks, CountMustMatchTheFileSize) {
  const auto tokens = lcg_tokens(30, 3);
  // More tokens promised than the file holds, and fewer.
  expect_bad_val_shard([&](const std::string& p) { write_shard(p, tokens, 20240520, 1, 31); },
                       "is 1084 bytes but its header promises 31 tokens (1086 bytes)");
  expect_bad_val_shard([&](const std::string& p) { write_shard(p, tokens, 20240520, 1, 29); },
                       "is 1084 bytes but its header promises 29 tokens (1082 bytes)");
  // A stray byte after the tokens, and a header that claims nothing for a file with tokens.
  expect_bad_val_shard([&](const std::string& p) { write_shard(p, tokens, 20240520, 1, -1, 1); },
                       "is 1085 bytes but its header promises 30 tokens (1084 bytes)");
  expect_bad_val_shard([&](const std::string& p) { write_shard(p, tokens, 20240520, 1, 0); },
                       "is 1084 bytes but its header promises 0 tokens (1024 bytes)");
  // The largest count a header can hold, far past the file.
  expect_bad_val_shard([&](const std::string& p) { write_shard(p, tokens, 20240520, 1, 2147483647); },
                       "promises 2147483647 tokens (4294968318 bytes)");
}

TEST(TokenShardChecks, ShardThatIsNotARegularFile) {
  TempDir dir;
  write_shard(dir.file("x_train.bin"), lcg_tokens(30, 4));
  write_shard(dir.file("x_val.bin"), lcg_tokens(30, 5));
  ASSERT_EQ(::mkfifo(dir.file("y_val.bin").c_str(), 0600), 0);
  // A glob lists the FIFO (a directory listing keeps regular files only); it is refused, not opened.
  const std::string msg = message_of<DataError>([&] { make_dataset(token_options(dir.file("*.bin")), 8); });
  EXPECT_TRUE(contains(msg, "cannot read the token shard " + dir.file("y_val.bin") + ": it is a FIFO"));
}

// A shard truncated while mapped: the reads past its new end would raise SIGBUS (a bare "Bus
// error", exit 135); they are a DataError naming the shard instead, and the process goes on.
TEST(TokenShardChecks, ShardThatShrinksWhileMappedIsADataErrorNotABusError) {
  TempDir dir;
  const std::string path = dir.file("a_train.bin");
  write_shard(path, lcg_tokens(20000, 7));  // 40 KB: pages past the first few
  TokenShards shards({path}, TokenShards::Access::random);
  std::vector<std::int32_t> out(100);
  ASSERT_EQ(::truncate(path.c_str(), 1024 + 200), 0);
  shards.copy(0, 100, out.data());  // still inside the file
  std::string msg = message_of<DataError>([&] { shards.copy(15000, 100, out.data()); });
  EXPECT_TRUE(contains(msg, path)) << msg;
  EXPECT_TRUE(contains(msg, "1224 bytes now")) << msg;
  msg = message_of<DataError>([&] { shards.scan_ids(0); });
  EXPECT_TRUE(contains(msg, path)) << msg;
  // The handler jumps back only from a shard read: the next one works (and fails) the same way.
  EXPECT_TRUE(contains(message_of<DataError>([&] { shards.copy(19000, 50, out.data()); }), path));
}

TEST(TokenShardChecks, IdOutsideTheVocabularyNamesShardTokenAndByteOffset) {
  TempDir dir;
  write_shard(dir.file("a_train_0.bin"), lcg_tokens(100, 6, 256));
  // Past the scan's first 1 MiB chunk of the shard, so the chunked scan finds it exactly.
  auto tokens = lcg_tokens(700000, 7, 256);
  tokens[600001] = 300;
  tokens[650000] = 400;  // only the first offender is named
  write_shard(dir.file("a_train_1.bin"), tokens);
  write_shard(dir.file("a_val.bin"), lcg_tokens(100, 8, 256));
  EXPECT_TRUE(contains(data_error(dir, 256), "token shard " + dir.file("a_train_1.bin") +
                                                 " holds token id 300 at token 600001 (byte offset 1201026) of "
                                                 "the shard, outside the model's vocabulary (model.vocab_size 256)"));
  // A vocabulary that holds every id takes it; without one the largest id + 1 is the vocabulary.
  EXPECT_EQ(make_dataset(token_options(dir.path().string(), 401), 8)->vocab_size(), 401);
  EXPECT_EQ(make_dataset(token_options(dir.path().string()), 8)->vocab_size(), 401);
  // In the validation split, at its first token.
  write_shard(dir.file("a_val.bin"), {65535, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  EXPECT_TRUE(contains(data_error(dir, 50304), "token shard " + dir.file("a_val.bin") +
                                                   " holds token id 65535 at token 0 (byte offset 1024) of the shard"));
  EXPECT_EQ(make_dataset(token_options(dir.path().string()), 8)->vocab_size(), 65536);
}

TEST(TokenShardChecks, HeadersAreCheckedBeforeAnyTokenIsRead) {
  // An id outside the vocabulary in the first train shard and a bad header in the last val shard:
  // the header is what the run hears about, without waiting for a scan of the tokens.
  TempDir dir;
  write_shard(dir.file("a_train.bin"), {1, 2, 999, 3, 4, 5, 6, 7, 8, 9});
  write_shard(dir.file("a_val.bin"), lcg_tokens(30, 9, 256));
  write_shard(dir.file("b_val.bin"), lcg_tokens(30, 9, 256), 20240520, 7);
  EXPECT_TRUE(contains(data_error(dir, 256), dir.file("b_val.bin") + " has unsupported version 7"));
  // And a block too long for the splits, likewise.
  write_shard(dir.file("b_val.bin"), lcg_tokens(3, 9, 256));
  const std::string msg = message_of<DataError>([&] { make_dataset(token_options(dir.path().string(), 256), 64); });
  EXPECT_TRUE(contains(msg, "block_size 64 is larger than the training split (10 tokens)"));
}

}  // namespace
}  // namespace gattn
