// The text side of a vocabulary: what turns a prompt into token ids and generated ids back into
// text. Two kinds stand behind it: the byte vocabulary of char-level text data (ByteVocab) and the
// tokenizer that token shards were made with (framework/text/tokenizer.h: gattn's SentencePiece
// tokenizers, or a Hugging Face tokenizer).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gattn {

class TextCodec {
 public:
  virtual ~TextCodec() = default;

  virtual std::int64_t size() const = 0;  // token ids are [0, size())
  // Throws ValueError when the text cannot be expressed in the vocabulary.
  virtual std::vector<std::int32_t> encode(const std::string& text) const = 0;
  virtual std::string decode(const std::vector<std::int32_t>& ids) const = 0;
  // The ids a model reads `text` as when the text starts a sequence (a prompt): encode() with the
  // tokens the tokenizer puts around a sequence — a Hugging Face post-processor's <|begin_of_text|>
  // or <s>, what `tokenizers`' encode(text, add_special_tokens=True) gives. gattn's own vocabularies
  // put none.
  virtual std::vector<std::int32_t> encode_prompt(const std::string& text) const { return encode(text); }
  // The raw bytes token `id` stands for on its own: streamed output and per-token displays print
  // these, and their lengths turn a loss per token into bits per byte. A multi-byte character split
  // over several tokens gives each of them a part of its bytes, so one token's bytes need not be
  // valid UTF-8; concatenated over a sequence they are its decoded text.
  virtual std::string token_bytes(std::int32_t id) const = 0;
  // Where a generation without a prompt starts: the newline token, as the lines of a text do.
  virtual std::int32_t start_token() const = 0;
};

// The byte offset of the first byte of `text` that is not part of valid UTF-8 (strictly: no
// overlong forms, no surrogates, nothing above U+10FFFF), or std::string::npos when it is all valid.
// SentencePiece would turn each such byte into U+FFFD, so a subword tokenizer refuses the text.
std::size_t invalid_utf8_offset(std::string_view text);

// ValueError "the text is not valid UTF-8 at byte offset N (0xAB): <who> reads UTF-8 only (…)" when
// `text` is not valid UTF-8: tokenizers refuse such text rather than lose bytes.
void require_utf8(std::string_view text, const std::string& who);

// Bytes per token id of `codec`, for bits per byte.
std::vector<std::int32_t> token_byte_lengths(const TextCodec& codec);

// `bytes` for a display of one token: printable ASCII and valid UTF-8 as they are, a newline as
// "↵", a tab as "→", and any other byte (a control byte, a part of a split character) as <0xAB>.
std::string display_token(const std::string& bytes);

}  // namespace gattn
