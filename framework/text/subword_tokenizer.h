// A SentencePiece subword tokenizer (BPE or unigram) as gattn uses it: `gattn tokenize` trains one
// and writes token shards with it; a token-shard run carries it into its run directory and
// checkpoints, so `gattn sample` and the report read and write text for the model.
//
// The tokenizer directory (`gattn tokenize train --out DIR`) holds tokenizer.model (SentencePiece's
// serialized model, the file whose SHA-256 identifies the tokenizer) and tokenizer.json (how it was
// trained).
#pragma once
#include <memory>
#include <string>

#include "framework/text/tokenizer.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace gattn {

inline constexpr const char* kTokenizerModelFile = "tokenizer.model";
inline constexpr const char* kTokenizerInfoFile = "tokenizer.json";

class SubwordTokenizer : public Tokenizer {
 public:
  // Loads SentencePiece's serialized model; `source` names it in the DataError thrown when the
  // bytes are not a model.
  SubwordTokenizer(std::string serialized_model, const std::string& source);
  ~SubwordTokenizer() override;
  SubwordTokenizer(const SubwordTokenizer&) = delete;
  SubwordTokenizer& operator=(const SubwordTokenizer&) = delete;

  // `path` is a tokenizer directory or a tokenizer.model file; DataError when it is neither.
  static std::shared_ptr<const SubwordTokenizer> load(const std::string& path);

  std::int64_t size() const override;
  std::vector<std::int32_t> encode(const std::string& text) const override;
  std::string decode(const std::vector<std::int32_t>& ids) const override;
  // encode() one line at a time: the same ids for any tokenizer without a piece that spans a
  // newline (every tokenizer gattn trains: it learns from lines), and about 4x faster on a long
  // text, where SentencePiece's merges slow down with the length of what they are given.
  std::vector<std::int32_t> encode_lines(const std::string& text) const;
  std::string token_bytes(std::int32_t id) const override;
  std::int32_t start_token() const override;

  // The piece as SentencePiece writes it ("▁the", "<0x0A>"), for listings.
  std::string piece(std::int32_t id) const override;
  // The end-of-document id (SentencePiece's </s>) put between input files, or -1 when the model
  // has none.
  std::int32_t end_of_document() const override;
  BlockCut block_cut() const override { return BlockCut::any_newline; }
  std::vector<std::int32_t> encode_block(const std::string& text, bool) const override { return encode_lines(text); }
  std::string kind() const override { return "SentencePiece"; }
  // {"tokenizer.model": the serialized model}.
  const std::map<std::string, std::string>& files() const override { return files_; }
  const std::string& serialized() const { return serialized_; }
  const std::string& sha256() const override { return sha256_; }

 private:
  std::string serialized_, sha256_;
  std::map<std::string, std::string> files_;
  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
};

}  // namespace gattn
