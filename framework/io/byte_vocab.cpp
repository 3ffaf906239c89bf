// ByteVocab: parsing the checkpoint's vocab array (byte values and reserved nulls), encoding and decoding.
#include "framework/io/byte_vocab.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/tensor/error.h"

namespace gattn {

std::optional<ByteVocab> ByteVocab::from_json(const std::string& json) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_array() || j.empty()) return std::nullopt;
  ByteVocab v;
  v.ids_.fill(-1);
  bool any_byte = false;
  for (const auto& b : j) {
    if (b.is_null()) {  // an id reserved for a sequence-to-sequence control token
      v.bytes_.push_back(-1);
      continue;
    }
    if (!b.is_number_integer() || b.get<int>() < 0 || b.get<int>() > 255) return std::nullopt;
    const auto byte = static_cast<unsigned char>(b.get<int>());
    if (v.ids_[byte] >= 0) return std::nullopt;  // a byte listed twice
    v.ids_[byte] = static_cast<std::int32_t>(v.bytes_.size());
    v.bytes_.push_back(static_cast<std::int16_t>(byte));
    any_byte = true;
  }
  if (!any_byte) return std::nullopt;  // only reserved ids: no text could be written or read
  return v;
}

std::optional<std::int32_t> ByteVocab::id_of(unsigned char byte) const {
  return ids_[byte] >= 0 ? std::optional<std::int32_t>(ids_[byte]) : std::nullopt;
}

std::vector<std::int32_t> ByteVocab::encode(const std::string& text) const {
  std::vector<std::int32_t> out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    std::optional<std::int32_t> id = id_of(byte);
    if (!id) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "byte 0x%02x ('%c') at offset %zu is not in the model's vocabulary", byte,
                    byte >= 32 && byte < 127 ? static_cast<char>(byte) : '?', i);
      throw ValueError(std::string("the text's ") + buf);
    }
    out.push_back(*id);
  }
  return out;
}

std::string ByteVocab::decode(const std::vector<std::int32_t>& tokens) const {
  std::string out;
  out.reserve(tokens.size());
  for (std::int32_t t : tokens) {
    if (t < 0 || t >= size()) {
      out.push_back('?');
      continue;
    }
    const std::int16_t byte = bytes_[static_cast<std::size_t>(t)];
    if (byte >= 0) out.push_back(static_cast<char>(byte));  // a reserved id (pad, start, end) is no text
  }
  return out;
}

}  // namespace gattn
