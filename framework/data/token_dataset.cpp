// `data.kind: tokens`: llm.c .bin shards (token_shards.h), memory-mapped and checked up front.
// Shards whose file name contains "val" form the validation split. Shards made by `gattn tokenize`
// have their tokenizer beside them (shard_tokenizer.h): it fixes the vocabulary and travels with
// the run.
#include <glob.h>

#include <algorithm>
#include <filesystem>
#include <utility>

#include "framework/data/shard_tokenizer.h"
#include "framework/data/token_shards.h"
#include "framework/data/windowed_dataset.h"

namespace gattn::data_detail {
namespace {

namespace fs = std::filesystem;

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
    std::error_code ec;
    const std::string shard_dir =
        fs::is_directory(options.path, ec) ? options.path : fs::path(train_files_.front()).parent_path().string();
    tokenizer_ = find_shard_tokenizer(shard_dir.empty() ? "." : shard_dir);
    // Every header is checked (and every shard mapped) before any token is read, and the split sizes
    // too, so a bad shard or a block too long fails the run at once rather than after a long scan.
    auto train = std::make_unique<TokenShards>(train_files_, TokenShards::Access::random);
    auto val = std::make_unique<TokenShards>(val_files_, TokenShards::Access::sequential);
    const TokenShards& train_shards = *train;
    const TokenShards& val_shards = *val;
    // Shards are concatenated: llm.c starts every document with <|endoftext|>, so a window crossing
    // a shard boundary is no different from one crossing a document boundary.
    train_ = std::move(train);
    val_ = std::move(val);
    check_fits(block_size);
    const std::int64_t max_id =
        std::max(train_shards.scan_ids(options.vocab_size), val_shards.scan_ids(options.vocab_size));
    vocab_size_ = options.vocab_size > 0 ? options.vocab_size : std::max<std::int64_t>(max_id, 0) + 1;
    if (tokenizer_) {
      if (max_id >= tokenizer_->size())
        throw DataError("token shards at " + options.path + " hold token id " + std::to_string(max_id) +
                        ", but their " + "tokenizer (" + shard_dir + "/tokenizer.model) has " +
                        std::to_string(tokenizer_->size()) + " pieces: the shards were not made with it");
      // At least the tokenizer's pieces, so that every id it encodes a prompt into has an embedding;
      // a smaller model.vocab_size is then refused as smaller than the data's vocabulary.
      vocab_size_ = std::max(vocab_size_, tokenizer_->size());
    }
  }

  std::shared_ptr<const SubwordTokenizer> tokenizer() const override { return tokenizer_; }

  std::int64_t vocab_size() const override { return vocab_size_; }

  std::string describe() const override {
    std::string s = "tokens ";
    s.append(source_).append(": ").append(std::to_string(train_files_.size())).append(" train / ");
    s.append(std::to_string(val_files_.size())).append(" val shards, vocab ").append(std::to_string(vocab_size_));
    s.append(", ").append(std::to_string(train_->size())).append(" train / ");
    s.append(std::to_string(val_->size())).append(" val tokens");
    return s;
  }

 private:
  std::vector<std::string> train_files_, val_files_;
  std::int64_t vocab_size_ = 0;
  std::shared_ptr<const SubwordTokenizer> tokenizer_;
};

}  // namespace

std::unique_ptr<Dataset> make_token_dataset(const DataOptions& options, std::int64_t block_size) {
  return std::make_unique<TokenDataset>(options, block_size);
}

}  // namespace gattn::data_detail
