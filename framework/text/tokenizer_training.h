// Training a SentencePiece tokenizer on a user's text (`gattn tokenize train`), set up so that every
// text round-trips exactly: no normalisation, whitespace kept as it is, no dummy prefix, and
// characters outside the learned pieces encoded as their UTF-8 bytes (byte fallback), so any
// language and any emoji encode and decode to the same bytes.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gattn {

struct TokenizerTrainingOptions {
  std::vector<std::string> inputs;  // UTF-8 text files; each line is a training sentence
  std::int64_t vocab_size = 0;      // pieces including the 256 byte pieces and <unk>, <s>, </s>
  std::string model_type = "bpe";   // bpe | unigram
  double character_coverage = 0.9995;
  std::int64_t max_lines = 0;  // 0: every line; else a uniform sample of this many lines
  int threads = 1;
};

// The smallest and largest vocabularies: 256 byte pieces, 3 control pieces and at least one learned
// piece; token shards store ids as uint16.
inline constexpr std::int64_t kMinTokenizerVocab = 260;
inline constexpr std::int64_t kMaxTokenizerVocab = 65536;

struct TrainedTokenizer {
  std::string serialized_model;  // tokenizer.model
  nlohmann::json info;           // tokenizer.json: options, inputs, sizes, seconds, sha256
};

// Throws ValueError (exit 2) for bad options, DataError (exit 3) for an unreadable input, a corpus
// without text, or a corpus SentencePiece cannot learn the vocabulary from.
TrainedTokenizer train_tokenizer(const TokenizerTrainingOptions& options);

}  // namespace gattn
