// Token classes for the gate's reading by token ([GateAttn-Guide] §3.2: the decoder's context gate is
// said to drop on punctuation and function words and rise on content words): each position of a
// decoded sequence is punctuation, a function word, a content word or other (whitespace, special
// tokens). Works on the bytes of any vocabulary: characters, byte-level BPE pieces, SentencePiece
// pieces, because a token takes the class of the word its bytes fall in within the sequence's text.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gattn {

enum class TokenClass : int { punctuation = 0, function_word = 1, content_word = 2, other = 3 };
inline constexpr int kTokenClasses = 4;

// "punct", "function", "content", "other": the column names of gattn inspect and gattn report.
const char* token_class_name(TokenClass c);

// True when `word` (ASCII letters, any case; internal apostrophes kept, as in "o'er") is on gattn's
// function-word list (framework/text/function_words.cpp): English closed-class words — articles,
// pronouns, prepositions, conjunctions, auxiliaries, determiners, negation — with the Early Modern
// English forms of Shakespeare's text (thou, thee, thy, hath, doth, art, 'tis, ere, …).
bool is_function_word(std::string_view word);

// The class of each token of one sequence, given each token's bytes (an empty string for a special
// token: start, end). The tokens' bytes are joined into the sequence's text; a word is a maximal run
// of letters, digits and non-ASCII bytes (a UTF-8 letter), with an apostrophe inside it kept. A token
// with a byte in a word takes that word's class (the first such word; a piece of "running" is a
// content word, the BPE piece " the" a function word); else a token with an ASCII punctuation byte is
// punctuation; else (whitespace, control bytes, special tokens) other.
std::vector<TokenClass> classify_tokens(const std::vector<std::string>& token_bytes);

// Gate values summed by class: what gattn inspect and report print as a class's mean.
struct TokenClassMeans {
  std::array<double, kTokenClasses> sum{};
  std::array<std::int64_t, kTokenClasses> count{};
  void add(TokenClass c, double value) {
    sum[static_cast<std::size_t>(c)] += value;
    ++count[static_cast<std::size_t>(c)];
  }
  bool empty() const;
  // The class's mean, NaN where it counted nothing.
  double mean(TokenClass c) const;
};

}  // namespace gattn
