// The vocabulary of char-level text data (a checkpoint's "vocab", docs/checkpoint-format.md): token id t
// stands for byte vocab[t].
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
  // Parses the JSON array of byte values; nullopt when `json` is empty or not such an array.
  static std::optional<ByteVocab> from_json(const std::string& json);

  std::int64_t size() const override { return static_cast<std::int64_t>(bytes_.size()); }
  std::optional<std::int32_t> id_of(unsigned char byte) const;
  // Throws ValueError naming the first character that is not in the vocabulary.
  std::vector<std::int32_t> encode(const std::string& text) const override;
  std::string decode(const std::vector<std::int32_t>& tokens) const override;  // ids outside the vocab become '?'
  std::string token_bytes(std::int32_t id) const override { return decode({id}); }
  std::int32_t start_token() const override { return id_of('\n').value_or(0); }

 private:
  std::vector<unsigned char> bytes_;
  std::array<std::int32_t, 256> ids_{};
};

}  // namespace gattn
