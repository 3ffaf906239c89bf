// `data.kind: pairs` (docs/seq2seq.md): a UTF-8 file of `source<TAB>target` lines for an
// encoder–decoder model, read byte-level (the reserved ids, then the file's distinct bytes) or through
// a `gattn tokenize` tokenizer (data.tokenizer). The last tenth of the pairs validate, the rest train;
// a training batch is random pairs padded to its own longest source and target.
#include <algorithm>
#include <array>
#include <string_view>
#include <vector>

#include "framework/base/input_file.h"
#include "framework/data/seq2seq_batch.h"
#include "framework/data/windowed_dataset.h"
#include "framework/text/tokenizer_directory.h"

namespace gattn::data_detail {
namespace {

// One pair's tokens in PairDataset::tokens_: the source, then the target right after it.
struct PairSpan {
  std::int64_t offset = 0;
  std::int64_t source_length = 0, target_length = 0;
  std::int64_t line = 0;  // 1-based, for messages
};

// A line split at its first tab (a target may hold more tabs).
struct RawPair {
  std::string_view source, target;
  std::int64_t line = 0;
};

class PairDataset : public Dataset {
 public:
  PairDataset(const DataOptions& options, std::int64_t block_size) : path_(options.path) {
    if (path_.empty()) throw DataError("data.path is empty: a pairs dataset needs a file of source<TAB>target lines");
    const std::string bytes = read_input_file<DataError>(path_, "the pairs data file");
    if (!options.tokenizer.empty()) load_tokenizer(options.tokenizer);
    const std::vector<RawPair> raw = split_lines(bytes);
    if (raw.size() < 2)
      throw DataError("pairs file " + path_ + " has " + std::to_string(raw.size()) +
                      " source<TAB>target line(s): it needs at least 2 (pairs to train on and to validate)");
    if (!tokenizer_) build_byte_vocab(raw);
    for (const RawPair& p : raw) add_pair(p);
    // ⌊0.9·N⌋ pairs train, as text data splits its bytes, and at least one validates.
    const auto n = static_cast<std::int64_t>(pairs_.size());
    n_train_ = std::min(n * 9 / 10, n - 1);
    check_fits(block_size);
  }

  std::int64_t vocab_size() const override {
    return tokenizer_ ? tokenizer_->size() : kSeq2SeqFirstContent + static_cast<std::int64_t>(bytes_.size());
  }
  bool reports_accuracy() const override { return true; }
  bool seq2seq() const override { return true; }
  std::shared_ptr<const Tokenizer> tokenizer() const override { return tokenizer_; }

  // The reserved ids are null: they stand for no byte (framework/io/byte_vocab.h).
  std::string vocab_json() const override {
    if (tokenizer_) return "";
    std::string json = "[";
    for (std::int32_t id = 0; id < kSeq2SeqFirstContent; ++id) json.append(id ? ",null" : "null");
    for (unsigned char b : bytes_) json.append(",").append(std::to_string(static_cast<int>(b)));
    json.append("]");
    return json;
  }

  Batch sample_train(std::int64_t batch_size, std::int64_t block_size, Generator& gen) const override {
    if (batch_size <= 0)
      throw ValueError("sample_train: batch size must be positive, got " + std::to_string(batch_size));
    check_fits(block_size);
    std::vector<std::int64_t> picks(static_cast<std::size_t>(batch_size));
    for (auto& p : picks) p = random_index(gen, n_train_);
    return gather(picks);
  }

  std::int64_t eval_windows(std::int64_t /*block_size*/, std::int64_t max_windows) const override {
    const std::int64_t n_val = static_cast<std::int64_t>(pairs_.size()) - n_train_;
    return max_windows > 0 ? std::min(n_val, max_windows) : n_val;
  }

  Batch eval_batch(std::int64_t first_window, std::int64_t count, std::int64_t block_size) const override {
    const std::int64_t n_val = eval_windows(block_size, 0);
    if (first_window < 0 || count <= 0 || first_window + count > n_val)
      throw ValueError("eval_batch: pairs [" + std::to_string(first_window) + ", " +
                       std::to_string(first_window + count) + ") out of range; " + path_ + " has " +
                       std::to_string(n_val) + " validation pairs");
    check_fits(block_size);
    std::vector<std::int64_t> picks(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i) picks[static_cast<std::size_t>(i)] = n_train_ + first_window + i;
    return gather(picks);
  }

  std::string describe() const override {
    std::string s = "pairs " + path_ + ": ";
    if (tokenizer_)
      s.append("tokenizer ").append(tokenizer_->sha256().substr(0, 12)).append("… (vocab ");
    else
      s.append("bytes (vocab 3 reserved + ").append(std::to_string(bytes_.size())).append(" = ");
    s.append(std::to_string(vocab_size())).append("), ").append(std::to_string(n_train_)).append(" train / ");
    s.append(std::to_string(static_cast<std::int64_t>(pairs_.size()) - n_train_)).append(" val pairs, sources up to ");
    s.append(std::to_string(max_source_)).append(" and targets up to ").append(std::to_string(max_target_));
    s.append(" tokens");
    return s;
  }

 private:
  std::string where(std::int64_t line) const { return "pairs file " + path_ + " line " + std::to_string(line); }

  void load_tokenizer(const std::string& dir) {
    tokenizer_ = gattn::load_tokenizer(dir);
    // Its control pieces must sit where seq2seq data puts pad, start and end.
    const char* const expected[] = {"<unk>", "<s>", "</s>"};
    bool ok = tokenizer_->size() > kSeq2SeqFirstContent;
    for (std::int32_t id = 0; id < kSeq2SeqFirstContent && ok; ++id) ok = tokenizer_->piece(id) == expected[id];
    if (!ok)
      throw DataError("data.tokenizer " + dir + ": ids 0, 1, 2 must be <unk>, <s>, </s> (pad, start, end of seq2seq " +
                      "data), got '" + tokenizer_->piece(0) + "', '" + tokenizer_->piece(1) + "', '" +
                      tokenizer_->piece(2) + "' (train one with gattn tokenize train)");
  }

  // The non-empty lines as pairs; a line ends at '\n', and a '\r' before it (CRLF files) is dropped.
  std::vector<RawPair> split_lines(const std::string& bytes) const {
    std::vector<RawPair> out;
    const std::string_view all(bytes);
    std::int64_t line = 0;
    for (std::size_t at = 0; at < all.size();) {
      std::size_t end = all.find('\n', at);
      if (end == std::string_view::npos) end = all.size();
      std::string_view text = all.substr(at, end - at);
      at = end + 1;
      ++line;
      if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
      if (text.empty()) continue;
      const std::size_t tab = text.find('\t');
      if (tab == std::string_view::npos) throw DataError(where(line) + ": no tab between source and target");
      RawPair p{text.substr(0, tab), text.substr(tab + 1), line};
      if (p.source.empty()) throw DataError(where(line) + ": the source (before the tab) is empty");
      if (p.target.empty()) throw DataError(where(line) + ": the target (after the tab) is empty");
      out.push_back(p);
    }
    return out;
  }

  // Ids kSeq2SeqFirstContent… for the distinct bytes of every source and target, in byte order.
  void build_byte_vocab(const std::vector<RawPair>& raw) {
    std::array<bool, 256> present{};
    for (const RawPair& p : raw)
      for (std::string_view text : {p.source, p.target})
        for (char c : text) present[static_cast<unsigned char>(c)] = true;
    for (int b = 0; b < 256; ++b)
      if (present[static_cast<std::size_t>(b)]) {
        id_of_[static_cast<std::size_t>(b)] = static_cast<std::int32_t>(kSeq2SeqFirstContent + bytes_.size());
        bytes_.push_back(static_cast<unsigned char>(b));
      }
  }

  // Appends text's ids to tokens_; returns how many.
  std::int64_t encode(std::string_view text, std::int64_t line, const char* part) {
    const std::size_t before = tokens_.size();
    if (!tokenizer_) {
      for (char c : text) tokens_.push_back(id_of_[static_cast<unsigned char>(c)]);
    } else {
      std::vector<std::int32_t> ids;
      try {
        ids = tokenizer_->encode(std::string(text));
      } catch (const ValueError& e) {  // text that is not UTF-8
        throw DataError(where(line) + ": the " + part + ": " + e.what());
      }
      // <unk> (id 0) would be read as padding; byte fallback (every `gattn tokenize` tokenizer) never emits it.
      for (std::int32_t id : ids)
        if (id < kSeq2SeqFirstContent)
          throw DataError(where(line) + ": the tokenizer turns part of the " + part + " into '" +
                          tokenizer_->piece(id) + "' (id " + std::to_string(id) +
                          "), which seq2seq data reserves (use a tokenizer with byte fallback)");
      tokens_.insert(tokens_.end(), ids.begin(), ids.end());
    }
    return static_cast<std::int64_t>(tokens_.size() - before);
  }

  void add_pair(const RawPair& p) {
    PairSpan span;
    span.offset = static_cast<std::int64_t>(tokens_.size());
    span.line = p.line;
    span.source_length = encode(p.source, p.line, "source");
    span.target_length = encode(p.target, p.line, "target");
    max_source_ = std::max(max_source_, span.source_length);
    max_target_ = std::max(max_target_, span.target_length);
    pairs_.push_back(span);
  }

  // Pairs are never cut: one that does not fit names its line.
  void check_fits(std::int64_t block_size) const {
    if (max_source_ <= block_size && max_target_ + 1 <= block_size) return;
    for (const PairSpan& p : pairs_)
      if (p.source_length > block_size || p.target_length + 1 > block_size)
        throw DataError(where(p.line) + ": the source is " + std::to_string(p.source_length) +
                        " tokens and the target " + std::to_string(p.target_length) +
                        " + end; each must fit model.block_size " + std::to_string(block_size) +
                        " (shorten the pair or raise model.block_size)");
  }

  // The pairs at `indices` as one batch, padded to its longest source and target.
  Batch gather(const std::vector<std::int64_t>& indices) const {
    std::int64_t source_width = 0, target_width = 0;
    for (std::int64_t i : indices) {
      const PairSpan& p = pairs_[static_cast<std::size_t>(i)];
      source_width = std::max(source_width, p.source_length);
      target_width = std::max(target_width, p.target_length);
    }
    Batch b = empty_seq2seq_batch(static_cast<std::int64_t>(indices.size()), source_width, target_width);
    for (std::size_t r = 0; r < indices.size(); ++r) {
      const PairSpan& p = pairs_[static_cast<std::size_t>(indices[r])];
      const std::int32_t* source = tokens_.data() + p.offset;
      put_seq2seq_row(b, static_cast<std::int64_t>(r), source, p.source_length, source + p.source_length,
                      p.target_length);
    }
    return b;
  }

  std::string path_;
  std::shared_ptr<const Tokenizer> tokenizer_;  // nullptr: byte-level
  std::vector<unsigned char> bytes_;            // byte-level: id kSeq2SeqFirstContent + i is bytes_[i]
  std::array<std::int32_t, 256> id_of_{};
  std::vector<std::int32_t> tokens_;
  std::vector<PairSpan> pairs_;  // in file order: [0, n_train_) train, the rest val
  std::int64_t n_train_ = 0;
  std::int64_t max_source_ = 0, max_target_ = 0;
};

}  // namespace

std::unique_ptr<Dataset> make_pair_dataset(const DataOptions& options, std::int64_t block_size) {
  return std::make_unique<PairDataset>(options, block_size);
}

}  // namespace gattn::data_detail
