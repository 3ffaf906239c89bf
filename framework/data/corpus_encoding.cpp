// encode_corpus: read blocks, assign each to its split, encode a batch in parallel, append in order.
#include "framework/data/corpus_encoding.h"

#include <omp.h>

#include <chrono>
#include <memory>

#include "framework/base/errors.h"
#include "framework/data/token_shard_writer.h"
#include "framework/text/text_blocks.h"
#include "framework/text/tokenizer_training.h"

namespace gattn {

namespace {

// One unit of work: a block of text and where its tokens go.
struct Piece {
  std::string text;
  bool val = false;
  bool end_of_file = false;  // append the end-of-document token after the block's tokens
  bool continues = false;    // not the first block of its file
  std::vector<std::int32_t> ids;
};

void check_options(const CorpusEncodingOptions& o) {
  if (o.inputs.empty()) throw ValueError("tokenize encode: no --input files given");
  if (!(o.val_fraction > 0 && o.val_fraction < 1))
    throw ValueError("tokenize encode: --val-fraction must be in (0, 1), got " + std::to_string(o.val_fraction));
  if (o.shard_tokens < 1 || o.shard_tokens > 2147483647)
    throw ValueError("tokenize encode: --shard-tokens must be in [1, 2147483647] (the header's count is int32), got " +
                     std::to_string(o.shard_tokens));
  if (o.threads < 1) throw ValueError("tokenize encode: --threads must be >= 1");
}

// Where in `block` (which starts at stream byte `begin`) the val split starts: the first line start
// at or after stream byte val_from; block.size() when it starts after the block.
std::size_t val_start(const std::string& block, std::uint64_t begin, std::uint64_t val_from, bool at_line_start) {
  const std::size_t from =
      val_from > begin ? static_cast<std::size_t>(std::min<std::uint64_t>(val_from - begin, block.size())) : 0;
  if (from == 0 && at_line_start) return 0;
  // Byte i starts a line when byte i - 1 is a newline.
  const std::size_t newline = block.find('\n', from == 0 ? 0 : from - 1);
  return newline == std::string::npos ? block.size() : newline + 1;
}

}  // namespace

nlohmann::json encode_corpus(const Tokenizer& tokenizer, const CorpusEncodingOptions& options,
                             const std::filesystem::path& dir, const EncodingProgress& progress) {
  check_options(options);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::unique_ptr<TextBlocks>> files;
  nlohmann::json inputs = nlohmann::json::array();
  std::uint64_t total = 0;
  for (const auto& path : options.inputs) {
    files.push_back(
        std::make_unique<TextBlocks>(path, "the text to encode", options.block_bytes,
                                     tokenizer.block_cut() == Tokenizer::BlockCut::newline_between_non_space));
    inputs.push_back({{"path", path}, {"bytes", files.back()->size()}});
    total += files.back()->size();
  }
  if (total == 0) throw DataError("tokenize encode: the input holds no text (every file is empty)");
  // The val split starts at the first line start at or after this byte of the stream.
  const auto val_from = static_cast<std::uint64_t>(static_cast<double>(total) * (1.0 - options.val_fraction));

  TokenShardWriter train(dir, "train", options.shard_tokens, tokenizer.size()),
      val(dir, "val", options.shard_tokens, tokenizer.size());
  std::uint64_t offset = 0, train_bytes = 0, val_bytes = 0;
  bool in_val = false;
  const std::int32_t eod = tokenizer.end_of_document();
  const std::size_t batch = static_cast<std::size_t>(options.threads) * 4;
  std::vector<Piece> pieces;
  std::size_t file = 0;
  std::string block;
  bool at_line_start = true;  // the next block starts a line (or a file)
  bool file_start = true;     // the next block starts a file
  while (file < files.size()) {
    // Read a batch of blocks, cutting the block where the val split starts in two.
    pieces.clear();
    while (pieces.size() < batch && file < files.size()) {
      if (!files[file]->next(block)) {
        pieces.push_back({"", in_val, true, true, {}});  // only the end-of-document token
        ++file;
        at_line_start = true;
        file_start = true;
        continue;
      }
      const std::uint64_t begin = offset;
      offset += block.size();
      const std::size_t cut = in_val ? 0 : val_start(block, begin, val_from, at_line_start);
      at_line_start = block.back() == '\n';
      if (cut > 0) pieces.push_back({block.substr(0, cut), false, false, !file_start, {}});
      if (cut < block.size()) {
        in_val = true;
        pieces.push_back({block.substr(cut), true, false, cut > 0 || !file_start, {}});
      }
      file_start = false;
    }
    // Encode in parallel: SentencePiece's processor and HfTokenizer are safe to use from several threads.
    const auto n = static_cast<std::int64_t>(pieces.size());
    std::string error;
#pragma omp parallel for schedule(dynamic, 1) num_threads(options.threads)
    for (std::int64_t i = 0; i < n; ++i) {
      try {
        Piece& piece = pieces[static_cast<std::size_t>(i)];
        piece.ids = tokenizer.encode_block(piece.text, piece.continues);
      } catch (const std::exception& e) {
#pragma omp critical(gattn_encode_error)
        error = e.what();
      }
    }
    if (!error.empty()) throw DataError("tokenize encode: " + error);
    for (Piece& p : pieces) {
      if (p.end_of_file && eod >= 0) p.ids.push_back(eod);
      (p.val ? val : train).append(p.ids);
      (p.val ? val_bytes : train_bytes) += p.text.size();
    }
    if (progress) progress(offset, total);
  }
  const std::vector<WrittenShard> train_shards = train.finish(), val_shards = val.finish();
  if (train.tokens() == 0 || val.tokens() == 0)
    throw DataError("tokenize encode: the " + std::string(train.tokens() == 0 ? "train" : "val") + " split is empty (" +
                    std::to_string(total) + " bytes of text, --val-fraction " + std::to_string(options.val_fraction) +
                    "; the split starts at a line start)");
  nlohmann::json shards = nlohmann::json::array();
  for (const auto& [list, split] : {std::pair{&train_shards, "train"}, std::pair{&val_shards, "val"}})
    for (const WrittenShard& s : *list) shards.push_back({{"file", s.file}, {"split", split}, {"tokens", s.tokens}});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return {{"format", "gattn-token-shards/1"},
          {"tokenizer_sha256", tokenizer.sha256()},
          {"vocab_size", tokenizer.size()},
          {"inputs", inputs},
          {"val_fraction", options.val_fraction},
          {"train_tokens", train.tokens()},
          {"val_tokens", val.tokens()},
          {"train_bytes", train_bytes},
          {"val_bytes", val_bytes},
          {"shard_tokens", options.shard_tokens},
          {"shards", shards},
          {"threads", options.threads},
          {"encode_seconds", seconds}};
}

}  // namespace gattn
