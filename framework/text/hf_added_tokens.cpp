// AddedTokenMatcher: leftmost-longest matching with tokenizers' strip and single-word rules.
#include "framework/text/hf_added_tokens.h"

#include <unicode/uchar.h>
#include <unicode/utf8.h>

#include <algorithm>
#include <cstring>

namespace gattn {

namespace {

// The code point that ends at `end` (exclusive) and where it starts.
UChar32 char_before(std::string_view text, std::size_t end, std::size_t& start) {
  std::int32_t i = static_cast<std::int32_t>(end);
  UChar32 c;
  U8_PREV(reinterpret_cast<const std::uint8_t*>(text.data()), 0, i, c);
  start = static_cast<std::size_t>(i);
  return c;
}

UChar32 char_at(std::string_view text, std::size_t begin, std::size_t& next) {
  std::int32_t i = static_cast<std::int32_t>(begin);
  UChar32 c;
  U8_NEXT(reinterpret_cast<const std::uint8_t*>(text.data()), i, static_cast<std::int32_t>(text.size()), c);
  next = static_cast<std::size_t>(i);
  return c;
}

// Rust's char::is_alphanumeric() or '_', what tokenizers takes for a character of a word.
bool word_char(UChar32 c) { return c == '_' || u_isalnum(c); }
// Rust's char::is_whitespace(): the White_Space property.
bool space_char(UChar32 c) { return u_isUWhiteSpace(c); }

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens, std::vector<std::string> patterns)
    : tokens_(std::move(tokens)), patterns_(std::move(patterns)) {
  for (std::size_t i = 0; i < patterns_.size(); ++i)
    if (!patterns_[i].empty()) by_first_byte_[static_cast<unsigned char>(patterns_[i][0])].push_back(i);
  for (auto& list : by_first_byte_)
    std::stable_sort(list.begin(), list.end(),
                     [&](std::size_t a, std::size_t b) { return patterns_[a].size() > patterns_[b].size(); });
}

void AddedTokenMatcher::split(std::string_view text, std::vector<TextSegment>& out) const {
  out.clear();
  std::size_t done = 0;  // the end of the last segment
  for (std::size_t at = 0; at < text.size();) {
    const auto& candidates = by_first_byte_[static_cast<unsigned char>(text[at])];
    std::size_t which = patterns_.size();
    for (std::size_t i : candidates)
      if (text.size() - at >= patterns_[i].size() &&
          std::memcmp(text.data() + at, patterns_[i].data(), patterns_[i].size()) == 0) {
        which = i;
        break;
      }
    if (which == patterns_.size()) {
      ++at;
      continue;
    }
    const AddedToken& token = tokens_[which];
    std::size_t begin = at, end = at + patterns_[which].size();
    at = end;                    // the search goes on after the match, whatever is stripped
    if (begin < done) continue;  // inside the whitespace an rstrip took
    if (token.single_word) {
      std::size_t unused;
      const bool word_before = begin > 0 && word_char(char_before(text, begin, unused));
      const bool word_after = end < text.size() && word_char(char_at(text, end, unused));
      if (word_before || word_after) continue;
    }
    if (token.lstrip) {
      std::size_t b = begin;
      while (b > 0) {
        std::size_t start;
        if (!space_char(char_before(text, b, start))) break;
        b = start;
      }
      begin = std::max(b, done);
    }
    if (token.rstrip) {
      while (end < text.size()) {
        std::size_t next;
        if (!space_char(char_at(text, end, next))) break;
        end = next;
      }
    }
    if (done < begin) out.push_back({-1, done, begin});
    out.push_back({token.id, begin, end});
    done = end;
  }
  if (done < text.size()) out.push_back({-1, done, text.size()});
}

}  // namespace gattn
