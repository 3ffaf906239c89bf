// The vocabulary of byte-level text data (a checkpoint's "vocab", docs/checkpoint-format.md): token id t
// stands for byte vocab[t]. Sequence-to-sequence pairs reserve their lowest ids for pad, start and end
// (framework/data/seq2seq_tokens.h); those entries are JSON null and stand for no text.
// Encodes prompts and decodes generated tokens for `gattn sample` and the end-of-run sample.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "framework/text/text_codec.h"

namespace gattn {

class ByteVocab : public TextCodec {
 public:
  // Parses the JSON array of distinct byte values and nulls (reserved ids), at least one byte; nullopt
  // when `json` is empty or not such an array. An array without nulls reads as it always did.
  static std::optional<ByteVocab> from_json(const std::string& json);

  std::int64_t size() const override { return static_cast<std::int64_t>(bytes_.size()); }
  std::optional<std::int32_t> id_of(unsigned char byte) const;
  // Whether `id` is a reserved entry (null): it encodes nothing and decodes to "".
  bool reserved(std::int32_t id) const { return id >= 0 && id < size() && bytes_[static_cast<std::size_t>(id)] < 0; }
  // Throws ValueError naming the first character that is not in the vocabulary.
  std::vector<std::int32_t> encode(const std::string& text) const override;
  // Reserved ids decode to nothing; ids outside the vocab become '?'.
  std::string decode(const std::vector<std::int32_t>& tokens) const override;
  std::string token_bytes(std::int32_t id) const override { return decode({id}); }
  std::int32_t start_token() const override { return id_of('\n').value_or(0); }

 private:
  std::vector<std::int16_t> bytes_;  // token id -> byte value, or -1 for a reserved id
  std::array<std::int32_t, 256> ids_{};
};

}  // namespace gattn
