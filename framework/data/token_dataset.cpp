// `data.kind: tokens`: llm.c .bin shards (token_shards.h), memory-mapped and checked up front.
// Shards whose file name contains "val" form the validation split. Shards made by `gattn tokenize`
// have their tokenizer beside them (shard_tokenizer.h): it fixes the vocabulary and travels with
// the run.
#include <glob.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

#include "framework/base/input_file.h"
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

// The shards a run reads must all belong to the tokenizer it uses, and a `meta.json` beside them
// must describe them: a glob over two tokenize outputs, or a stray shard copied in from another
// encode, would otherwise train on ids that mean other pieces without a word.
//
// Every directory the shards come from must have the same tokenizer (the same sha256, or none in
// all of them). Where a directory's meta.json lists its shards (tokenize encode's), each shard read
// from it must be listed with the token count its header holds; when the run reads the directory
// whole, every listed shard must be there and the splits' totals must match meta.json's.
void check_shard_provenance(const std::vector<const TokenShards*>& splits, const std::string& path,
                            const std::shared_ptr<const Tokenizer>& tokenizer, const std::string& tokenizer_dir) {
  std::error_code ec;
  const bool whole_directory = fs::is_directory(path, ec);
  const std::string used = tokenizer ? "tokenizer " + tokenizer->sha256().substr(0, 12) + "… (" + tokenizer_dir + ")"
                                     : "no tokenizer (" + tokenizer_dir + " has none)";
  struct Used {
    std::string name;
    std::int64_t tokens;
    std::size_t split;  // index into splits: 0 train, 1 val
  };
  std::map<std::string, std::vector<Used>> by_dir;
  for (std::size_t k = 0; k < splits.size(); ++k)
    for (std::size_t i = 0; i < splits[k]->shard_count(); ++i) {
      const fs::path file(splits[k]->shard_path(i));
      const std::string dir = file.parent_path().empty() ? "." : file.parent_path().string();
      by_dir[dir].push_back({file.filename().string(), splits[k]->shard_tokens(i), k});
    }
  for (const auto& [dir, files] : by_dir) {
    const std::string first = (fs::path(dir) / files.front().name).string();
    if (fs::weakly_canonical(dir, ec) != fs::weakly_canonical(tokenizer_dir, ec)) {
      const std::shared_ptr<const Tokenizer> other = find_shard_tokenizer(dir);
      const std::string theirs = other ? other->sha256() : "", ours = tokenizer ? tokenizer->sha256() : "";
      if (theirs != ours)
        throw DataError("token shard " + first + " belongs to " +
                        (other ? "tokenizer " + theirs.substr(0, 12) + "… (" + dir + ")" : "no tokenizer") +
                        ", but the run uses " + used +
                        ": shards of different tokenizers cannot be mixed (give data.path one tokenize output)");
    }
    const fs::path meta_path = fs::path(dir) / "meta.json";
    if (!fs::exists(meta_path, ec)) continue;
    const nlohmann::json meta = nlohmann::json::parse(
        read_input_file<DataError>(meta_path.string(), "the token shards' meta.json", 64u << 20), nullptr, false);
    if (!meta.is_object() || !meta.contains("shards")) continue;  // find_shard_tokenizer judged the rest
    const nlohmann::json& listed = meta["shards"];
    std::map<std::string, std::int64_t> listed_tokens;
    bool well_formed = listed.is_array();
    for (const auto& s : well_formed ? listed : nlohmann::json::array()) {
      if (!s.is_object() || !s.contains("file") || !s["file"].is_string() || !s.contains("tokens") ||
          !s["tokens"].is_number_integer()) {
        well_formed = false;
        break;
      }
      listed_tokens[s["file"].get<std::string>()] = s["tokens"].get<std::int64_t>();
    }
    if (!well_formed)
      throw DataError("token shard meta.json " + meta_path.string() +
                      ": 'shards' is not a list of {file, tokens} (damaged?)");
    for (const Used& used_file : files) {
      const std::string file = (fs::path(dir) / used_file.name).string();
      const auto it = listed_tokens.find(used_file.name);
      if (it == listed_tokens.end())
        throw DataError("token shard " + file + " is not listed in " + meta_path.string() +
                        ": a shard from another encode? (remove it, or encode the text again)");
      if (it->second != used_file.tokens)
        throw DataError("token shard " + file + " holds " + std::to_string(used_file.tokens) + " tokens, but " +
                        meta_path.string() + " lists " + std::to_string(it->second) +
                        ": the shard was replaced or meta.json changed");
    }
    if (!whole_directory) continue;
    for (const auto& [name, tokens] : listed_tokens)
      if (std::none_of(files.begin(), files.end(), [&](const Used& f) { return f.name == name; }))
        throw DataError("token shard " + (fs::path(dir) / name).string() + ", listed in " + meta_path.string() +
                        ", is missing");
    for (std::size_t k = 0; k < splits.size() && k < 2; ++k) {
      const std::string split = k == 0 ? "train" : "val", key = split + "_tokens";
      if (!meta.contains(key) || !meta[key].is_number_integer()) continue;
      std::int64_t sum = 0;
      for (const Used& f : files)
        if (f.split == k) sum += f.tokens;
      if (sum != meta[key].get<std::int64_t>())
        throw DataError("token shards in " + dir + " hold " + std::to_string(sum) + " " + split + " tokens, but " +
                        meta_path.string() + " records " + key + " " + std::to_string(meta[key].get<std::int64_t>()));
    }
  }
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
    check_shard_provenance({&train_shards, &val_shards}, options.path, tokenizer_, shard_dir.empty() ? "." : shard_dir);
    check_fits(block_size);
    // A vocabulary smaller than the tokenizer is a setting to change, not bad data: say so before
    // the scan would report the first id beyond it as a bad token.
    if (tokenizer_ && options.vocab_size > 0 && options.vocab_size < tokenizer_->size())
      throw ValueError("model.vocab_size " + std::to_string(options.vocab_size) + " is smaller than the " +
                       std::to_string(tokenizer_->size()) + " pieces of the shards' tokenizer (" + shard_dir +
                       "): set it to at least " + std::to_string(tokenizer_->size()) +
                       ", or to 0 to take the tokenizer's size");
    const std::int64_t max_id =
        std::max(train_shards.scan_ids(options.vocab_size), val_shards.scan_ids(options.vocab_size));
    vocab_size_ = options.vocab_size > 0 ? options.vocab_size : std::max<std::int64_t>(max_id, 0) + 1;
    if (tokenizer_) {
      if (max_id >= tokenizer_->size())
        throw DataError("token shards at " + options.path + " hold token id " + std::to_string(max_id) +
                        ", but their " + "tokenizer (" + shard_dir + ") has " + std::to_string(tokenizer_->size()) +
                        " pieces: the shards were not made with it");
      // At least the tokenizer's pieces, so that every id it encodes a prompt into has an embedding;
      // a smaller model.vocab_size is then refused as smaller than the data's vocabulary.
      vocab_size_ = std::max(vocab_size_, tokenizer_->size());
    }
  }

  std::shared_ptr<const Tokenizer> tokenizer() const override { return tokenizer_; }

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
  std::shared_ptr<const Tokenizer> tokenizer_;
};

}  // namespace

std::unique_ptr<Dataset> make_token_dataset(const DataOptions& options, std::int64_t block_size) {
  return std::make_unique<TokenDataset>(options, block_size);
}

}  // namespace gattn::data_detail
