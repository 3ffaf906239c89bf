// The added tokens of a tokenizer.json (<|endoftext|>, <|begin_of_text|>, <s>, <tool_call>, …): text
// that stands for one id whatever the model would make of it. Before anything else, encoding cuts
// them out of the text, as tokenizers' AddedVocabulary does: the leftmost match, the longest of
// those starting there; `single_word` keeps only matches that are not inside a word, `lstrip` and
// `rstrip` take the whitespace before or after into the token. Tokens with `normalized` false are
// matched in the raw text, the others in the normalized text (their content normalized too).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gattn {

struct AddedToken {
  std::int32_t id = 0;
  std::string content;
  bool special = false, lstrip = false, rstrip = false, normalized = false, single_word = false;
};

// A piece of text: an added token (id >= 0) or text for the model (id -1), as [begin, end) of it.
struct TextSegment {
  std::int32_t id;
  std::size_t begin, end;
};

class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  // `patterns[i]` is what `tokens[i]` matches (its content, normalized for normalized tokens).
  AddedTokenMatcher(std::vector<AddedToken> tokens, std::vector<std::string> patterns);

  bool empty() const { return tokens_.empty(); }
  // `text` cut into segments in order; text without added tokens is one segment of id -1.
  void split(std::string_view text, std::vector<TextSegment>& out) const;

 private:
  std::vector<AddedToken> tokens_;
  std::vector<std::string> patterns_;
  std::array<std::vector<std::size_t>, 256> by_first_byte_;  // indices, longest pattern first
};

}  // namespace gattn
