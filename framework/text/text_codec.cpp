// Byte lengths and the display form of tokens.
#include "framework/text/text_codec.h"

#include <cstdio>

#include "core/tensor/error.h"

namespace gattn {

std::vector<std::int32_t> token_byte_lengths(const TextCodec& codec) {
  std::vector<std::int32_t> out(static_cast<std::size_t>(codec.size()));
  for (std::size_t id = 0; id < out.size(); ++id)
    out[id] = static_cast<std::int32_t>(codec.token_bytes(static_cast<std::int32_t>(id)).size());
  return out;
}

namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 when none starts there.
std::size_t utf8_sequence(const std::string& s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  std::size_t n = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
  if (c >= 0xF5) n = 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  return n;
}

}  // namespace

std::size_t invalid_utf8_offset(std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n;) {
    const unsigned c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len = 0;
    unsigned lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;  // overlong
      if (c == 0xED) hi = 0x9F;  // surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;  // overlong
      if (c == 0xF4) hi = 0x8F;  // above U+10FFFF
    } else {
      return i;
    }
    if (i + len > n || p[i + 1] < lo || p[i + 1] > hi) return i;
    for (std::size_t k = 2; k < len; ++k)
      if ((p[i + k] & 0xC0) != 0x80) return i;
    i += len;
  }
  return std::string::npos;
}

void require_utf8(std::string_view text, const std::string& who) {
  const std::size_t at = invalid_utf8_offset(text);
  if (at == std::string::npos) return;
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(text[at]));
  throw ValueError("the text is not valid UTF-8 at byte offset " + std::to_string(at) + " (" + hex + "): " + who +
                   " reads UTF-8 only (convert the text, e.g. with iconv)");
}

std::string display_token(const std::string& bytes) {
  std::string out;
  for (std::size_t i = 0; i < bytes.size();) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c == '\n') {
      out += "\u21b5";  // ↵
      ++i;
    } else if (c == '\t') {
      out += "\u2192";  // →
      ++i;
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
      ++i;
    } else if (const std::size_t n = c >= 0x80 ? utf8_sequence(bytes, i) : 0; n > 0) {
      out.append(bytes, i, n);
      i += n;
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "<0x%02X>", c);
      out += hex;
      ++i;
    }
  }
  return out;
}

}  // namespace gattn
