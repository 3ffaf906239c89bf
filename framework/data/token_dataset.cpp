// `data.kind: tokens`: llm.c .bin shards (256 little-endian int32 header, magic 20240520, version 1,
// token count, then uint16 tokens). Shards whose file name contains "val" form the validation split.
#include <glob.h>

#include <algorithm>
#include <filesystem>
#include <new>

#include "framework/data/windowed_dataset.h"
#include "framework/io/input_file.h"

namespace gattn::data_detail {
namespace {

namespace fs = std::filesystem;

constexpr std::int32_t kShardMagic = 20240520;
constexpr std::int32_t kShardVersion = 1;
constexpr std::size_t kHeaderInts = 256;
constexpr std::size_t kHeaderBytes = kHeaderInts * 4;

std::int32_t read_le_i32(const unsigned char* p) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
                                   (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24));
}

// The shard files of a directory (its *.bin) or of a glob pattern, sorted so the token order is stable.
std::vector<std::string> list_shards(const std::string& pattern) {
  if (pattern.empty()) throw DataError("data.path is empty: a tokens dataset needs a directory or glob of .bin shards");
  std::vector<std::string> files;
  std::error_code ec;
  if (fs::is_directory(pattern, ec)) {
    for (const auto& entry : fs::directory_iterator(pattern, ec))
      if (entry.is_regular_file() && entry.path().extension() == ".bin") files.push_back(entry.path().string());
    if (ec) throw DataError("cannot list token shard directory " + pattern + ": " + ec.message());
  } else {
    glob_t g{};
    int rc = ::glob(pattern.c_str(), 0, nullptr, &g);
    if (rc == 0)
      for (std::size_t i = 0; i < g.gl_pathc; ++i) files.emplace_back(g.gl_pathv[i]);
    ::globfree(&g);
    if (rc != 0 && rc != GLOB_NOMATCH) throw DataError("cannot expand token shard pattern " + pattern);
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) throw DataError("no token shards (.bin) found at " + pattern);
  return files;
}

// Appends the tokens of one shard to out after checking its header against its size.
void read_shard(const std::string& path, std::vector<std::uint16_t>& out) {
  const std::string bytes = read_input_file<DataError>(path, "the token shard");
  const std::uint64_t file_size = bytes.size();
  if (file_size < kHeaderBytes)
    throw DataError("token shard " + path + " is truncated: " + std::to_string(file_size) +
                    " bytes, shorter than the 1024-byte header");
  const auto* header = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::int32_t magic = read_le_i32(header), version = read_le_i32(header + 4), count = read_le_i32(header + 8);
  if (magic != kShardMagic)
    throw DataError("token shard " + path + " has bad magic " + std::to_string(magic) + " (expected 20240520)");
  if (version != kShardVersion)
    throw DataError("token shard " + path + " has unsupported version " + std::to_string(version) + " (expected 1)");
  if (count < 0) throw DataError("token shard " + path + " has a negative token count " + std::to_string(count));
  const std::uintmax_t expected = kHeaderBytes + 2 * static_cast<std::uintmax_t>(count);
  if (file_size != expected)
    throw DataError("token shard " + path + " is " + std::to_string(file_size) + " bytes but its header promises " +
                    std::to_string(count) + " tokens (" + std::to_string(expected) + " bytes)");
  const std::size_t before = out.size();
  try {
    out.resize(before + static_cast<std::size_t>(count));
  } catch (const std::bad_alloc&) {
    throw DataError("token shard " + path + ": its " + std::to_string(count) + " tokens (after " +
                    std::to_string(before) + " from earlier shards) do not fit in this machine's memory");
  }
  const unsigned char* raw = header + kHeaderBytes;
  for (std::size_t i = 0; i < static_cast<std::size_t>(count); ++i)
    out[before + i] = static_cast<std::uint16_t>(raw[2 * i] | (raw[2 * i + 1] << 8));
}

class TokenDataset : public WindowedDataset {
 public:
  TokenDataset(const DataOptions& options, std::int64_t block_size) {
    source_ = options.path;
    for (const auto& file : list_shards(options.path)) {
      const bool is_val = fs::path(file).filename().string().find("val") != std::string::npos;
      (is_val ? val_files_ : train_files_).push_back(file);
    }
    if (train_files_.empty()) throw DataError("no training shards (names without 'val') found at " + options.path);
    if (val_files_.empty()) throw DataError("no validation shards (names containing 'val') found at " + options.path);
    // Shards are concatenated: llm.c starts every document with <|endoftext|>, so a window crossing
    // a shard boundary is no different from one crossing a document boundary.
    for (const auto& f : train_files_) read_shard(f, train_);
    for (const auto& f : val_files_) read_shard(f, val_);
    std::int64_t max_token = 0;
    for (auto t : train_) max_token = std::max<std::int64_t>(max_token, t);
    for (auto t : val_) max_token = std::max<std::int64_t>(max_token, t);
    if (options.vocab_size > 0) {
      if (max_token >= options.vocab_size)
        throw DataError("token shards at " + options.path + " hold token id " + std::to_string(max_token) +
                        ", outside the model's vocabulary (model.vocab_size " + std::to_string(options.vocab_size) +
                        ")");
      vocab_size_ = options.vocab_size;
    } else {
      vocab_size_ = max_token + 1;
    }
    check_fits(block_size);
  }

  std::int64_t vocab_size() const override { return vocab_size_; }

  std::string describe() const override {
    std::string s = "tokens ";
    s.append(source_).append(": ").append(std::to_string(train_files_.size())).append(" train / ");
    s.append(std::to_string(val_files_.size())).append(" val shards, vocab ").append(std::to_string(vocab_size_));
    s.append(", ").append(std::to_string(train_.size())).append(" train / ");
    s.append(std::to_string(val_.size())).append(" val tokens");
    return s;
  }

 private:
  std::vector<std::string> train_files_, val_files_;
  std::int64_t vocab_size_ = 0;
};

}  // namespace

std::unique_ptr<Dataset> make_token_dataset(const DataOptions& options, std::int64_t block_size) {
  return std::make_unique<TokenDataset>(options, block_size);
}

}  // namespace gattn::data_detail
