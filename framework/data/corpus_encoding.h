// `gattn tokenize encode`: a corpus of text files through a subword tokenizer into train and val
// token shards. The files are one stream, in the order given, with the tokenizer's end-of-document
// token after each file; the last `val_fraction` of the stream's bytes (from the next line start
// on) is the val split, the rest the train split, as char-level text data splits its file. Blocks
// of about 256 KiB ending at line ends (where the tokenizer's block_cut allows) are encoded in
// parallel and written in order, so the shards are the same for any thread count.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "framework/text/tokenizer.h"

namespace gattn {

struct CorpusEncodingOptions {
  std::vector<std::string> inputs;
  double val_fraction = 0.1;                // in (0, 1)
  std::int64_t shard_tokens = 100'000'000;  // ids per shard, at most 2^31 - 1
  std::size_t block_bytes = 256 << 10;      // the unit of parallel work
  int threads = 1;
};

// Called after each batch of blocks with the input bytes done so far and in all.
using EncodingProgress = std::function<void(std::uint64_t done, std::uint64_t total)>;

// Writes <split>_NNNNNN.bin shards into `dir` and returns the summary meta.json records: tokens
// and bytes per split, the shards, the tokenizer's sha256. ValueError (exit 2) for bad options;
// DataError (exit 3) for unreadable inputs, a corpus with
// no text, or a split that would be empty.
nlohmann::json encode_corpus(const Tokenizer& tokenizer, const CorpusEncodingOptions& options,
                             const std::filesystem::path& dir, const EncodingProgress& progress);

}  // namespace gattn
