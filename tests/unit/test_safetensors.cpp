// safetensors files: round trips of every dtype, the exact bytes of a known file, atomic writes,
// one CheckpointError per kind of damage, random mutations, and a check with Python's reader.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include "framework/io/safetensors.h"
#include "test_util.h"

namespace gattn {
namespace {

namespace fs = std::filesystem;

using test::TempDir;

std::string read_bytes(const std::string& path) { return test::read_file(path); }

void write_bytes(const std::string& path, const std::string& bytes) {
  // A new file rather than a truncated one: ext4 flushes truncated-and-rewritten files on close,
  // which would make the 2000 rewrites of the mutation test take seconds.
  std::error_code ec;
  fs::remove(path, ec);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string le64(std::uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>(v >> (8 * i));
  return s;
}

std::uint64_t read_le64(const std::string& s) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(static_cast<unsigned char>(s[i])) << (8 * i);
  return v;
}

// A file from a header text (padded with spaces to a multiple of 8 like the official writer) and data.
std::string file_bytes(std::string header, const std::string& data) {
  header.append((8 - header.size() % 8) % 8, ' ');
  return le64(header.size()) + header + data;
}

std::string raw_bytes(const Tensor& t) {
  return std::string(static_cast<const char*>(t.raw_data()),
                     static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype()));
}

// Loading `path` throws CheckpointError whose message names the file and contains every needle.
::testing::AssertionResult load_fails(const std::string& path, const std::vector<std::string>& needles) {
  try {
    load_safetensors(path);
    return ::testing::AssertionFailure() << "loaded without an error";
  } catch (const CheckpointError& e) {
    std::string msg = e.what();
    if (msg.find(path) == std::string::npos)
      return ::testing::AssertionFailure() << "message does not name the file: " << msg;
    for (const auto& needle : needles)
      if (msg.find(needle) == std::string::npos)
        return ::testing::AssertionFailure() << "message lacks '" << needle << "': " << msg;
    return ::testing::AssertionSuccess() << msg;
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw something other than CheckpointError: " << e.what();
  }
}

std::vector<std::pair<std::string, Tensor>> sample_tensors() {
  std::vector<std::pair<std::string, Tensor>> ts;
  ts.emplace_back("z.f32", test::randn({2, 3}, 1, 1.0, DType::f32));
  ts.emplace_back("a.f64", test::randn({4}, 2, 1.0, DType::f64));
  ts.emplace_back("m.i32", Tensor::from_ints({-5, 0, 7, 2147483647, -2147483647 - 1, 3}, {3, 1, 2}));
  ts.emplace_back("b.bf16", test::randn({5}, 3, 1.0, DType::bf16));
  ts.emplace_back("scalar", Tensor::scalar(-3.25, DType::f32));
  ts.emplace_back("empty.f32", Tensor::zeros({0, 3}, DType::f32));
  ts.emplace_back("empty.i32", Tensor::zeros({0}, DType::i32));
  ts.emplace_back("last", Tensor::from({1, 2, 3}, {3}, DType::f64));
  return ts;
}

TEST(Safetensors, RoundTripEveryDtypeScalarAndZeroSize) {
  TempDir dir;
  auto tensors = sample_tensors();
  save_safetensors(dir.file("t.safetensors"), tensors, {});
  SafetensorsFile f = load_safetensors(dir.file("t.safetensors"));
  EXPECT_EQ(f.path, dir.file("t.safetensors"));
  ASSERT_EQ(f.tensors.size(), tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    SCOPED_TRACE(tensors[i].first);
    EXPECT_EQ(f.tensors[i].first, tensors[i].first);  // file order = the order given
    const Tensor& got = f.tensors[i].second;
    EXPECT_EQ(got.dtype(), tensors[i].second.dtype());
    EXPECT_EQ(got.shape(), tensors[i].second.shape());
    EXPECT_EQ(raw_bytes(got), raw_bytes(tensors[i].second));  // bit-exact
    EXPECT_FALSE(got.requires_grad());
  }
  EXPECT_TRUE(f.metadata.empty());
  EXPECT_FALSE(fs::exists(dir.file("t.safetensors.tmp")));
}

TEST(Safetensors, RoundTripLargeTensor) {
  TempDir dir;
  Tensor big = test::rand({300, 1000}, 7, -1, 1, DType::f32);
  save_safetensors(dir.file("big.safetensors"), {{"big", big}, {"tail", Tensor::scalar(1, DType::i32)}});
  SafetensorsFile f = load_safetensors(dir.file("big.safetensors"));
  ASSERT_EQ(f.tensors.size(), 2u);
  EXPECT_EQ(raw_bytes(f.get("big")), raw_bytes(big));
  EXPECT_EQ(f.get("tail").item(), 1.0);
}

TEST(Safetensors, MetadataRoundTrip) {
  TempDir dir;
  std::map<std::string, std::string> meta = {
      {"format", kCheckpointFormat},
      {"config", R"({"model":{"n_layer":2,"gate":{"kind":"output"}},"run":{"name":"quote \" and \\ and\nnewline"}})"},
      {"vocab", "[10,32,33,97,98,195,169]"},
      {"unicode", "gate \xc3\xa9t\xc3\xa9 \xe9\x97\xa8"},
      {"empty", ""},
  };
  save_safetensors(dir.file("m.safetensors"), {{"w", Tensor::ones({2})}}, meta);
  SafetensorsFile f = load_safetensors(dir.file("m.safetensors"));
  EXPECT_EQ(f.metadata, meta);
  EXPECT_EQ(f.metadata.at("format"), "gattn/1");

  save_safetensors(dir.file("none.safetensors"), {}, meta);  // metadata without tensors
  EXPECT_EQ(load_safetensors(dir.file("none.safetensors")).metadata, meta);
  EXPECT_TRUE(load_safetensors(dir.file("none.safetensors")).tensors.empty());
}

TEST(Safetensors, FindAndGet) {
  TempDir dir;
  save_safetensors(dir.file("f.safetensors"), {{"x", Tensor::ones({2})}, {"y", Tensor::zeros({1})}});
  SafetensorsFile f = load_safetensors(dir.file("f.safetensors"));
  ASSERT_NE(f.find("y"), nullptr);
  EXPECT_EQ(f.find("y")->shape(), (Shape{1}));
  EXPECT_EQ(f.find("nope"), nullptr);
  EXPECT_EQ(f.get("x").to_vector(), (std::vector<double>{1, 1}));
  try {
    f.get("nope");
    FAIL() << "get of a missing tensor did not throw";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("nope"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find(dir.file("f.safetensors")), std::string::npos);
  }
}

// The format pinned byte by byte: header JSON (metadata first, then tensors in the given order,
// keys dtype/shape/data_offsets), spaces up to a multiple of 8, little-endian data.
TEST(Safetensors, KnownFileBytes) {
  TempDir dir;
  std::vector<std::pair<std::string, Tensor>> ts;
  ts.emplace_back("w", Tensor::from({1.0, -2.0}, {2}, DType::f32));
  ts.emplace_back("n", Tensor::from_ints({7}, {}));
  ts.emplace_back("h", Tensor::from({1.0}, {1}, DType::bf16));
  save_safetensors(dir.file("k.safetensors"), ts, {{"format", "gattn/1"}});

  std::string header = R"({"__metadata__":{"format":"gattn/1"},)"
                       R"("w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                       R"("n":{"dtype":"I32","shape":[],"data_offsets":[8,12]},)"
                       R"("h":{"dtype":"BF16","shape":[1],"data_offsets":[12,14]}})";
  ASSERT_EQ(header.size(), 199u);
  header += ' ';                                         // 200 = 25 * 8
  const unsigned char data[] = {0x00, 0x00, 0x80, 0x3f,  // 1.0f
                                0x00, 0x00, 0x00, 0xc0,  // -2.0f
                                0x07, 0x00, 0x00, 0x00,  // 7
                                0x80, 0x3f};             // bf16 1.0
  const unsigned char length[] = {200, 0, 0, 0, 0, 0, 0, 0};
  std::string expected(reinterpret_cast<const char*>(length), 8);
  expected += header;
  expected += std::string(reinterpret_cast<const char*>(data), sizeof data);
  EXPECT_EQ(read_bytes(dir.file("k.safetensors")), expected);

  // ... and the reader understands the hand-made bytes.
  write_bytes(dir.file("hand.safetensors"), expected);
  SafetensorsFile f = load_safetensors(dir.file("hand.safetensors"));
  ASSERT_EQ(f.tensors.size(), 3u);
  EXPECT_EQ(f.tensors[0].first, "w");
  EXPECT_EQ(f.get("w").to_vector(), (std::vector<double>{1.0, -2.0}));
  EXPECT_EQ(f.get("n").shape(), Shape{});
  EXPECT_EQ(f.get("n").item(), 7.0);
  EXPECT_EQ(f.get("h").dtype(), DType::bf16);
  EXPECT_EQ(f.get("h").item(), 1.0);
  EXPECT_EQ(f.metadata.at("format"), "gattn/1");
}

TEST(Safetensors, HeaderIsPaddedToEightBytes) {
  TempDir dir;
  for (std::size_t len = 1; len <= 9; ++len) {
    std::string path = dir.file("name" + std::to_string(len) + ".safetensors");
    save_safetensors(path, {{std::string(len, 'x'), Tensor::ones({1})}});
    std::string bytes = read_bytes(path);
    std::uint64_t n = read_le64(bytes);
    EXPECT_EQ(n % 8, 0u) << "name length " << len;
    EXPECT_EQ(bytes.size(), 8 + n + 4);
  }
}

// Files written by other tools need not be padded and may order the header differently.
TEST(Safetensors, ReadsUnpaddedHeaderInAnyKeyOrder) {
  TempDir dir;
  std::string header =
      R"({"b":{"data_offsets":[4,8],"shape":[1],"dtype":"F32"},"a":{"shape":[1],"dtype":"F32","data_offsets":[0,4]}})";
  float v[2] = {1.5f, 2.5f};
  std::string path = dir.file("u.safetensors");
  write_bytes(path, le64(header.size()) + header + std::string(reinterpret_cast<const char*>(v), 8));
  SafetensorsFile f = load_safetensors(path);
  ASSERT_EQ(f.tensors.size(), 2u);
  EXPECT_EQ(f.tensors[0].first, "a");  // data order
  EXPECT_EQ(f.get("a").item(), 1.5);
  EXPECT_EQ(f.get("b").item(), 2.5);
}

TEST(Safetensors, FailedWriteLeavesExistingFileIntact) {
  TempDir dir;
  const std::string path = dir.file("model.safetensors");
  save_safetensors(path, {{"w", Tensor::ones({3})}});
  const std::string before = read_bytes(path);

  // The temporary cannot be created (a directory is in its way).
  fs::create_directory(path + ".tmp");
  EXPECT_THROW(save_safetensors(path, {{"w", Tensor::zeros({5})}}), CheckpointError);
  EXPECT_EQ(read_bytes(path), before);
  fs::remove(path + ".tmp");

  // The directory does not exist.
  EXPECT_THROW(save_safetensors(dir.file("no/such/dir/x.safetensors"), {{"w", Tensor::ones({1})}}), CheckpointError);
  EXPECT_FALSE(fs::exists(dir.file("no")));

  // The rename fails (the target is a non-empty directory): the temporary is cleaned up.
  fs::create_directories(dir.file("taken/inside"));
  EXPECT_THROW(save_safetensors(dir.file("taken"), {{"w", Tensor::ones({1})}}), CheckpointError);
  EXPECT_FALSE(fs::exists(dir.file("taken.tmp")));
  EXPECT_TRUE(fs::is_directory(dir.file("taken/inside")));

  // An unwritable directory (root ignores permissions, so this part only runs for other users).
  fs::permissions(dir.path(), fs::perms::owner_read | fs::perms::owner_exec, fs::perm_options::replace);
  if (::access(dir.path().c_str(), W_OK) != 0) {
    EXPECT_THROW(save_safetensors(path, {{"w", Tensor::zeros({5})}}), CheckpointError);
    EXPECT_EQ(read_bytes(path), before);
  }
  fs::permissions(dir.path(), fs::perms::owner_all, fs::perm_options::replace);

  // A successful save replaces the file and leaves no temporary behind.
  save_safetensors(path, {{"w", Tensor::zeros({5})}});
  EXPECT_EQ(load_safetensors(path).get("w").shape(), (Shape{5}));
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

TEST(Safetensors, SaveRejectsBadArgumentsBeforeWriting) {
  TempDir dir;
  const std::string path = dir.file("model.safetensors");
  save_safetensors(path, {{"w", Tensor::ones({3})}});
  const std::string before = read_bytes(path);
  Tensor ok = Tensor::ones({2});
  EXPECT_THROW(save_safetensors(path, {{"a", ok}, {"a", ok}}), ValueError);
  EXPECT_THROW(save_safetensors(path, {{"", ok}}), ValueError);
  EXPECT_THROW(save_safetensors(path, {{"__metadata__", ok}}), ValueError);
  EXPECT_THROW(save_safetensors(path, {{"a", ok}, {"b", Tensor()}}), ValueError);
  EXPECT_THROW(save_safetensors(path, {{"bad\xff", ok}}), ValueError);  // not UTF-8
  EXPECT_THROW(save_safetensors(path, {{"a", ok}}, {{"k", "\xc3"}}), ValueError);
  EXPECT_EQ(read_bytes(path), before);
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

TEST(Safetensors, UnreadableFilesThrowCheckpointError) {
  TempDir dir;
  EXPECT_TRUE(load_fails(dir.file("missing.safetensors"), {"cannot open"}));
  EXPECT_TRUE(load_fails(dir.path().string(), {"not a regular file"}));
  ASSERT_EQ(::mkfifo(dir.file("fifo").c_str(), 0600), 0);
  EXPECT_TRUE(load_fails(dir.file("fifo"), {"not a regular file"}));  // refused, not waited on
  for (std::size_t n : {0, 3, 7}) {
    write_bytes(dir.file("short"), std::string(n, '\x01'));
    EXPECT_TRUE(load_fails(dir.file("short"), {"truncated"})) << n << " bytes";
  }
  const std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const std::string data(8, '\0');
  std::string good = file_bytes(header, data);

  std::string p = dir.file("len.safetensors");
  write_bytes(p, le64(good.size()) + good.substr(8));  // header length beyond the file
  EXPECT_TRUE(load_fails(p, {"header length", "larger than"}));
  write_bytes(p, le64(~0ull) + good.substr(8));
  EXPECT_TRUE(load_fails(p, {"exceeds the limit"}));
  write_bytes(p, le64(kMaxSafetensorsHeaderBytes + 1) + good.substr(8));
  EXPECT_TRUE(load_fails(p, {"exceeds the limit"}));
  write_bytes(p, good.substr(0, good.size() - 1));  // the data is cut short
  EXPECT_TRUE(load_fails(p, {"'a'", "reach beyond"}));
  write_bytes(p, good.substr(0, 8 + 10));  // the header is cut short
  EXPECT_TRUE(load_fails(p, {"larger than"}));
}

struct Corruption {
  const char* what;
  std::string header;
  std::string data;
  std::vector<std::string> needles;
};

void expect_all_fail(const std::vector<Corruption>& cases) {
  TempDir dir;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].what);
    std::string path = dir.file("case" + std::to_string(i) + ".safetensors");
    write_bytes(path, file_bytes(cases[i].header, cases[i].data));
    EXPECT_TRUE(load_fails(path, cases[i].needles));
  }
}

const std::string k8(8, '\0');

TEST(Safetensors, MalformedHeaderThrowsCheckpointError) {
  expect_all_fail({
      {"empty header", "", "", {"not valid JSON"}},
      {"cut JSON", R"({"a":{"dtype":"F32")", k8, {"not valid JSON"}},
      {"not JSON", "hello", k8, {"not valid JSON"}},
      {"array root", "[1,2]", "", {"not an object"}},
      {"string root", R"("x")", "", {"not a JSON object"}},
      {"number root", "5", "", {"not a JSON object"}},
      {"garbage after JSON", R"({} x)", "", {"not valid JSON"}},
      {"NUL padding", std::string("{}\0\0", 4), "", {"NUL byte"}},
      {"NUL hides bytes", std::string("{}\0{\"a\":1}", 10), "", {"NUL byte"}},
      {"invalid UTF-8 name",
       "{\"a\xff\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
       k8,
       {"not valid JSON"}},
      {"entry not an object", R"({"a":5})", "", {"'a'", "not a JSON object"}},
      {"nested too deep", R"({"a":{"dtype":"F32","shape":[[2]],"data_offsets":[0,8]}})", k8, {"nests deeper"}},
      {"very deep nesting", "{\"a\":" + std::string(200000, '['), "", {"nests deeper"}},
      {"duplicate tensor",
       R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
       k8,
       {"duplicate tensor name 'a'"}},
      {"duplicate field",
       R"({"a":{"dtype":"F32","dtype":"F64","shape":[2],"data_offsets":[0,8]}})",
       k8,
       {"duplicate key 'dtype'"}},
      {"metadata not an object", R"({"__metadata__":[1]})", "", {"__metadata__"}},
      {"metadata value not a string", R"({"__metadata__":{"vocab":[1,2]}})", "", {"__metadata__", "'vocab'"}},
  });
}

TEST(Safetensors, BadFieldsThrowCheckpointError) {
  const std::string s2 = R"("shape":[2])";
  const std::string o8 = R"("data_offsets":[0,8])";
  auto entry = [](const std::string& fields) { return R"({"w.x":{)" + fields + "}}"; };
  expect_all_fail({
      {"missing dtype", entry(s2 + "," + o8), k8, {"'w.x'", "missing \"dtype\""}},
      {"missing shape", entry(R"("dtype":"F32",)" + o8), k8, {"'w.x'", "missing \"shape\""}},
      {"missing offsets", entry(R"("dtype":"F32",)" + s2), k8, {"'w.x'", "missing \"data_offsets\""}},
      {"dtype not a string", entry(R"("dtype":4,)" + s2 + "," + o8), k8, {"'w.x'", "\"dtype\" is not a string"}},
      {"unknown dtype", entry(R"("dtype":"F16",)" + s2 + "," + o8), k8, {"'w.x'", "unsupported dtype 'F16'"}},
      {"lowercase dtype", entry(R"("dtype":"f32",)" + s2 + "," + o8), k8, {"'w.x'", "unsupported dtype"}},
      {"shape not an array", entry(R"("dtype":"F32","shape":2,)" + o8), k8, {"'w.x'", "\"shape\" is not an array"}},
      {"float dim", entry(R"("dtype":"F32","shape":[2.0],)" + o8), k8, {"'w.x'", "non-integer"}},
      {"string dim", entry(R"("dtype":"F32","shape":["2"],)" + o8), k8, {"'w.x'", "non-integer"}},
      {"negative dim", entry(R"("dtype":"F32","shape":[-2],)" + o8), k8, {"'w.x'", "negative dimension"}},
      {"negative dim with zero",
       entry(R"("dtype":"F32","shape":[0,-1],"data_offsets":[0,0])"),
       "",
       {"negative dimension"}},
      {"huge dim", entry(R"("dtype":"F32","shape":[18446744073709551615],)" + o8), k8, {"'w.x'", "too large"}},
      {"dim beyond uint64", entry(R"("dtype":"F32","shape":[1e30],)" + o8), k8, {"'w.x'", "non-integer"}},
      {"numel overflow", entry(R"("dtype":"F32","shape":[4294967296,4294967296],)" + o8), k8, {"'w.x'", "64 bits"}},
      {"numel overflow before a zero",
       entry(R"("dtype":"F32","shape":[4294967296,4294967296,0],"data_offsets":[0,0])"),
       "",
       {"64 bits"}},
      {"bytes overflow",
       entry(R"("dtype":"F64","shape":[2305843009213693952],)" + o8),
       k8,
       {"'w.x'", "does not match"}},
      {"offsets not an array", entry(R"("dtype":"F32",)" + s2 + R"(,"data_offsets":8)"), k8, {"'w.x'", "data_offsets"}},
      {"one offset", entry(R"("dtype":"F32",)" + s2 + R"(,"data_offsets":[8])"), k8, {"'w.x'", "data_offsets"}},
      {"three offsets", entry(R"("dtype":"F32",)" + s2 + R"(,"data_offsets":[0,8,8])"), k8, {"'w.x'", "data_offsets"}},
      {"negative offset", entry(R"("dtype":"F32",)" + s2 + R"(,"data_offsets":[-8,0])"), k8, {"'w.x'", "data_offsets"}},
      {"float offset", entry(R"("dtype":"F32",)" + s2 + R"(,"data_offsets":[0,8.0])"), k8, {"'w.x'", "data_offsets"}},
      {"string offset", entry(R"("dtype":"F32",)" + s2 + R"(,"data_offsets":[0,"8"])"), k8, {"'w.x'", "data_offsets"}},
      {"reversed offsets", entry(R"("dtype":"F32","shape":[0],"data_offsets":[8,0])"), k8, {"'w.x'", "end before"}},
      {"offsets beyond data",
       entry(R"("dtype":"F32","shape":[4],"data_offsets":[0,16])"),
       k8,
       {"'w.x'", "reach beyond"}},
      {"huge offsets",
       entry(R"("dtype":"F32","shape":[2],"data_offsets":[18446744073709551608,18446744073709551615])"),
       k8,
       {"'w.x'", "reach beyond"}},
      {"size mismatch",
       entry(R"("dtype":"F32","shape":[3],)" + o8),
       std::string(12, '\0'),
       {"'w.x'", "does not match"}},
      {"dtype size mismatch", entry(R"("dtype":"F64",)" + s2 + "," + o8), k8, {"'w.x'", "does not match"}},
      {"scalar size mismatch", entry(R"("dtype":"F32","shape":[],)" + o8), k8, {"'w.x'", "does not match"}},
  });
}

TEST(Safetensors, BadLayoutThrowsCheckpointError) {
  expect_all_fail({
      {"overlap",
       R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
       std::string(12, '\0'),
       {"'b'", "overlap tensor 'a'"}},
      {"same range twice",
       R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"I32","shape":[2],"data_offsets":[0,8]}})",
       k8,
       {"overlap"}},
      {"zero-size inside another",
       R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"e":{"dtype":"F32","shape":[0],"data_offsets":[4,4]}})",
       k8,
       {"'e'", "overlap tensor 'a'"}},
      {"gap",
       R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
       std::string(12, '\0'),
       {"'b'", "unused"}},
      {"not starting at 0", R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", k8, {"'a'", "unused"}},
      {"trailing bytes", R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", k8, {"trailing"}},
      {"data without tensors", R"({})", k8, {"trailing"}},
      {"data with metadata only", R"({"__metadata__":{"format":"gattn/1"}})", "x", {"trailing"}},
  });
}

// Whatever happens to the bytes of a valid file, load either succeeds or throws CheckpointError.
TEST(Safetensors, RandomMutationsNeverCrash) {
  TempDir dir;
  const std::string path = dir.file("valid.safetensors");
  save_safetensors(path, sample_tensors(), {{"format", "gattn/1"}, {"vocab", "[1,2,3]"}});
  const std::string valid = read_bytes(path);
  const std::uint64_t header_len = read_le64(valid);
  const std::string json_chars = "{}[]\",:-.0123456789eE \\";

  std::mt19937_64 rng(20240613);
  auto below = [&](std::uint64_t n) { return n == 0 ? 0 : rng() % n; };
  const std::string target = dir.file("mutant.safetensors");
  int loaded = 0, rejected = 0;
  for (int iter = 0; iter < 2000; ++iter) {
    std::string bytes = valid;
    const int kind = static_cast<int>(below(7));
    switch (kind) {
      case 0:  // flip bytes anywhere
        for (std::uint64_t k = 0, n = 1 + below(4); k < n; ++k)
          bytes[below(bytes.size())] ^= static_cast<char>(1 + below(255));
        break;
      case 1:  // flip bytes in the header, where most structure is
        for (std::uint64_t k = 0, n = 1 + below(3); k < n; ++k)
          bytes[8 + below(header_len)] ^= static_cast<char>(1 + below(255));
        break;
      case 2:  // truncate
        bytes.resize(below(bytes.size()));
        break;
      case 3: {  // a new header length: random, near the true one, or within the file
        std::uint64_t v = below(3) == 0   ? rng()
                          : below(3) == 0 ? header_len + below(33) - 16
                                          : below(bytes.size() + 16);
        bytes.replace(0, 8, le64(v));
        break;
      }
      case 4: {  // insert bytes
        std::string ins(1 + below(16), '\0');
        for (auto& c : ins) c = static_cast<char>(below(256));
        bytes.insert(below(bytes.size() + 1), ins);
        break;
      }
      case 5:  // JSON punctuation and digits in the header
        for (std::uint64_t k = 0, n = 1 + below(3); k < n; ++k)
          bytes[8 + below(header_len)] = json_chars[below(json_chars.size())];
        break;
      default: {  // delete a range
        std::uint64_t at = below(bytes.size());
        bytes.erase(at, 1 + below(24));
        break;
      }
    }
    write_bytes(target, bytes);
    try {
      SafetensorsFile f = load_safetensors(target);
      std::uint64_t total = 0;
      for (const auto& [name, t] : f.tensors) total += static_cast<std::uint64_t>(t.numel()) * dtype_size(t.dtype());
      EXPECT_LE(total, bytes.size()) << "iteration " << iter;
      ++loaded;
    } catch (const CheckpointError& e) {
      ++rejected;
      EXPECT_NE(std::string(e.what()).find(target), std::string::npos) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "iteration " << iter << " (mutation " << kind << ") threw a non-CheckpointError: " << e.what();
    }
  }
  // Both outcomes must occur, or the mutations are not exercising the reader.
  EXPECT_GT(loaded, 0);
  EXPECT_GT(rejected, 1000);
}

// numpy (and, when installed, the `safetensors` package) reads what we write. GATTN_TEST_PYTHON
// selects another interpreter, e.g. a virtual environment with numpy.
TEST(Safetensors, PythonReaderAgrees) {
  const char* env = std::getenv("GATTN_TEST_PYTHON");
  const std::string python = env && *env ? env : "/usr/bin/python3";
  if (std::system(("'" + python + "' -c 'import numpy' >/dev/null 2>&1").c_str()) != 0)
    GTEST_SKIP() << python << " with numpy is not available (install python3-numpy to run this check)";
  TempDir dir;
  std::vector<std::pair<std::string, Tensor>> ts;
  ts.emplace_back("weight", Tensor::from({-1.0, -0.5, 0.0, 0.5, 1.0, 1.5}, {2, 3}, DType::f32));
  ts.emplace_back("moments", Tensor::from({0.1, 1e-300, -3.0}, {3}, DType::f64));
  ts.emplace_back("ids", Tensor::from_ints({1, -2, 3, 2147483647}, {2, 2}));
  ts.emplace_back("step", Tensor::scalar(42.0, DType::f32));
  ts.emplace_back("none", Tensor::zeros({0, 4}, DType::f32));
  const std::string file = dir.file("py.safetensors");
  save_safetensors(file, ts, {{"format", "gattn/1"}, {"vocab", "[97,98]"}});

  const std::string script = R"PY(
import json, struct, sys
import numpy as np
path = sys.argv[1]
buf = open(path, 'rb').read()
(n,) = struct.unpack('<Q', buf[:8])
assert n % 8 == 0, n
header = json.loads(buf[8:8 + n])
meta = header.pop('__metadata__')
assert meta == {'format': 'gattn/1', 'vocab': '[97,98]'}, meta
assert json.loads(meta['vocab']) == [97, 98]
np_dtypes = {'F32': '<f4', 'F64': '<f8', 'I32': '<i4'}
def tensor(name):
    info = header[name]
    b, e = info['data_offsets']
    return np.frombuffer(buf[8 + n + b:8 + n + e], dtype=np_dtypes[info['dtype']]).reshape(info['shape'])
expected = {
    'weight': np.array([[-1, -0.5, 0], [0.5, 1, 1.5]], dtype=np.float32),
    'moments': np.array([0.1, 1e-300, -3.0], dtype=np.float64),
    'ids': np.array([[1, -2], [3, 2147483647]], dtype=np.int32),
    'step': np.array(42, dtype=np.float32),
    'none': np.zeros((0, 4), dtype=np.float32),
}
assert list(header) == list(expected), list(header)
for name, want in expected.items():
    got = tensor(name)
    assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want), (name, got)
try:
    from safetensors.numpy import load_file
except ImportError:
    print('numpy reader ok; safetensors package not installed')
else:
    loaded = load_file(path)
    for name, want in expected.items():
        assert np.array_equal(loaded[name], want) and loaded[name].shape == want.shape, name
    print('numpy and safetensors readers ok')
)PY";
  const std::string script_path = dir.file("check.py");
  write_bytes(script_path, script);
  const std::string log = dir.file("check.log");
  int rc = std::system(("'" + python + "' '" + script_path + "' '" + file + "' >'" + log + "' 2>&1").c_str());
  EXPECT_TRUE(rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << "python reader failed:\n" << read_bytes(log);
  std::cout << "[ python ] " << read_bytes(log);
}

}  // namespace
}  // namespace gattn
