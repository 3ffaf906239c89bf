// Classifying a sequence's tokens by the words their bytes fall in.
#include "framework/text/token_class.h"

#include <cmath>
#include <limits>

namespace gattn {

namespace {

bool ascii_alnum(unsigned char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
// A byte that can be part of a word on its own: ASCII letters and digits, and every byte of a
// multi-byte UTF-8 character (letters of other scripts, accented letters).
bool word_byte(unsigned char c) { return ascii_alnum(c) || c >= 0x80; }
bool ascii_punctuation(unsigned char c) { return c > 0x20 && c < 0x7f && !ascii_alnum(c); }

// The byte-level class of every byte of `text`: a word's class for its bytes, punctuation, or other.
std::vector<TokenClass> byte_classes(const std::string& text) {
  const std::size_t n = text.size();
  std::vector<TokenClass> out(n, TokenClass::other);
  auto at = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  std::size_t i = 0;
  while (i < n) {
    if (!word_byte(at(i))) {
      if (ascii_punctuation(at(i))) out[i] = TokenClass::punctuation;
      ++i;
      continue;
    }
    // A word: word bytes, and an apostrophe with word bytes on both sides ("o'er", "I'll").
    std::size_t end = i;
    while (end < n && (word_byte(at(end)) || (at(end) == '\'' && end > i && end + 1 < n && word_byte(at(end + 1)))))
      ++end;
    std::string word = text.substr(i, end - i);
    for (char& c : word)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    const TokenClass c = is_function_word(word) ? TokenClass::function_word : TokenClass::content_word;
    for (std::size_t k = i; k < end; ++k) out[k] = c;
    i = end;
  }
  return out;
}

}  // namespace

const char* token_class_name(TokenClass c) {
  switch (c) {
    case TokenClass::punctuation:
      return "punct";
    case TokenClass::function_word:
      return "function";
    case TokenClass::content_word:
      return "content";
    case TokenClass::other:
      break;
  }
  return "other";
}

std::vector<TokenClass> classify_tokens(const std::vector<std::string>& token_bytes) {
  std::string text;
  std::vector<std::size_t> begin;
  begin.reserve(token_bytes.size() + 1);
  for (const std::string& t : token_bytes) {
    begin.push_back(text.size());
    text += t;
  }
  begin.push_back(text.size());
  const std::vector<TokenClass> bytes = byte_classes(text);
  std::vector<TokenClass> out(token_bytes.size(), TokenClass::other);
  for (std::size_t t = 0; t < token_bytes.size(); ++t) {
    bool punctuation = false;
    for (std::size_t k = begin[t]; k < begin[t + 1]; ++k) {
      if (bytes[k] == TokenClass::function_word || bytes[k] == TokenClass::content_word) {
        out[t] = bytes[k];
        punctuation = false;
        break;
      }
      punctuation = punctuation || bytes[k] == TokenClass::punctuation;
    }
    if (punctuation) out[t] = TokenClass::punctuation;
  }
  return out;
}

bool TokenClassMeans::empty() const {
  for (std::int64_t c : count)
    if (c > 0) return false;
  return true;
}

double TokenClassMeans::mean(TokenClass c) const {
  const auto k = static_cast<std::size_t>(c);
  return count[k] > 0 ? sum[k] / static_cast<double>(count[k]) : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace gattn
