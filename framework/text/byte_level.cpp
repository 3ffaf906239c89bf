// The byte-level alphabet, built as GPT-2's bytes_to_unicode() builds it.
#include "framework/text/byte_level.h"

#include <unordered_map>

namespace gattn {

namespace {

std::string utf8(char32_t c) {
  std::string out;
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
  return out;
}

struct Alphabet {
  std::array<std::string, 256> chars;
  std::unordered_map<std::string, unsigned char> bytes;
  Alphabet() {
    // The printable bytes keep their code point; the others take 256, 257, … in byte order.
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      chars[static_cast<std::size_t>(b)] = utf8(printable ? static_cast<char32_t>(b) : next++);
      bytes[chars[static_cast<std::size_t>(b)]] = static_cast<unsigned char>(b);
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet a;
  return a;
}

}  // namespace

const std::string& byte_level_char(unsigned char b) { return alphabet().chars[b]; }

std::optional<std::string> byte_level_bytes(std::string_view token) {
  const Alphabet& a = alphabet();
  std::string out;
  for (std::size_t i = 0; i < token.size();) {
    // Every character of the alphabet is one or two bytes of UTF-8.
    const auto c = static_cast<unsigned char>(token[i]);
    const std::size_t n = c < 0x80 ? 1 : (c >= 0xC0 && c < 0xE0) ? 2 : 0;
    if (n == 0 || i + n > token.size()) return std::nullopt;
    const auto it = a.bytes.find(std::string(token.substr(i, n)));
    if (it == a.bytes.end()) return std::nullopt;
    out += static_cast<char>(it->second);
    i += n;
  }
  return out;
}

}  // namespace gattn
