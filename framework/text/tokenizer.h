// What gattn needs of a tokenizer beyond turning text into ids and back (TextCodec): who it is,
// the files that make it, its pieces and its end-of-document token. Two kinds stand behind it:
// gattn's own SentencePiece tokenizers (SubwordTokenizer, from `gattn tokenize train`) and Hugging
// Face tokenizers (HfTokenizer: a model repository's tokenizer.json). Token shards, pair data,
// checkpoints, `gattn sample` and the report take either (docs/tokenize.md).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "framework/text/text_codec.h"

namespace gattn {

class Tokenizer : public TextCodec {
 public:
  // The files that make the tokenizer, by name, byte for byte as they were read: what is copied
  // beside token shards and into run directories, and carried in checkpoints.
  virtual const std::map<std::string, std::string>& files() const = 0;
  // Its identity: 64 lowercase hex digits, equal for the same files (SubwordTokenizer: the SHA-256
  // of tokenizer.model; HfTokenizer: hf_tokenizer_sha256 of its files).
  virtual const std::string& sha256() const = 0;
  // The piece as the tokenizer writes it ("▁the", "Ġthe", "<0x0A>", "<|endoftext|>"), for listings;
  // "" for an id it does not have.
  virtual std::string piece(std::int32_t id) const = 0;
  // The id put between documents (SentencePiece's </s>; a Hugging Face tokenizer's eos_token), or
  // -1 when there is none.
  virtual std::int32_t end_of_document() const = 0;
  // Where corpus encoding may cut a long text into blocks that are encoded on their own and give
  // the ids of the whole: after any newline (gattn's SentencePiece tokenizers: no piece spans one), or
  // only after a newline with no whitespace on either side (Hugging Face pre-tokenizers keep runs of
  // whitespace and newlines together, and punctuation with the newlines after it).
  enum class BlockCut { any_newline, newline_between_non_space };
  virtual BlockCut block_cut() const = 0;
  // encode() of one such block; `continues` says the block continues the one before it rather than
  // starting a document (a tokenizer that marks the start of its input, as Llama 2's dummy "▁"
  // prefix does, marks only a document's start).
  virtual std::vector<std::int32_t> encode_block(const std::string& text, bool continues) const = 0;
  // "SentencePiece" or "Hugging Face (…)", for messages and summaries.
  virtual std::string kind() const = 0;
};

}  // namespace gattn
