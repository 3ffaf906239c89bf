// `data.kind: text`: a file read as bytes, char-level over its distinct bytes, split 90/10 (docs/config.md).
#include <array>
#include <utility>
#include <vector>

#include "framework/base/input_file.h"
#include "framework/data/windowed_dataset.h"

namespace gattn::data_detail {
namespace {

std::string read_file_bytes(const std::string& path) {
  if (path.empty()) throw DataError("data.path is empty: a text dataset needs a file");
  std::string bytes = read_input_file<DataError>(path, "the text data file");
  if (bytes.empty()) throw DataError("text data file is empty: " + path);
  return bytes;
}

class TextDataset : public WindowedDataset {
 public:
  TextDataset(const std::string& path, std::int64_t block_size) {
    source_ = path;
    const std::string bytes = read_file_bytes(path);
    std::array<bool, 256> present{};
    for (unsigned char c : bytes) present[c] = true;
    std::array<std::uint16_t, 256> id_of{};
    for (int b = 0; b < 256; ++b)
      if (present[static_cast<std::size_t>(b)]) {
        id_of[static_cast<std::size_t>(b)] = static_cast<std::uint16_t>(vocab_.size());
        vocab_.push_back(static_cast<unsigned char>(b));
      }
    const std::size_t n = bytes.size(), n_train = n * 9 / 10;  // ⌊0.9·N⌋ in exact integer arithmetic
    std::vector<std::uint16_t> train, val;
    train.reserve(n_train);
    val.reserve(n - n_train);
    for (std::size_t i = 0; i < n; ++i)
      (i < n_train ? train : val).push_back(id_of[static_cast<unsigned char>(bytes[i])]);
    train_ = std::make_unique<TokenVector>(std::move(train));
    val_ = std::make_unique<TokenVector>(std::move(val));
    check_fits(block_size);
  }

  std::int64_t vocab_size() const override { return static_cast<std::int64_t>(vocab_.size()); }

  std::string vocab_json() const override {
    std::string json = "[";
    for (std::size_t i = 0; i < vocab_.size(); ++i) {
      if (i) json.append(",");
      json.append(std::to_string(static_cast<int>(vocab_[i])));
    }
    json.append("]");
    return json;
  }

  std::string describe() const override {
    std::string s = "text ";
    s.append(source_).append(": vocab ").append(std::to_string(vocab_.size()));
    s.append(" bytes, ").append(std::to_string(train_->size())).append(" train / ");
    s.append(std::to_string(val_->size())).append(" val tokens");
    return s;
  }

 private:
  std::vector<unsigned char> vocab_;  // token id -> byte value, ascending
};

}  // namespace

std::unique_ptr<Dataset> make_text_dataset(const DataOptions& options, std::int64_t block_size) {
  return std::make_unique<TextDataset>(options.path, block_size);
}

}  // namespace gattn::data_detail
