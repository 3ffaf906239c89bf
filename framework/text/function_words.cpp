// gattn's function-word list, the "function" class of the gate-by-token-class statistics
// (framework/text/token_class.h). Frequent English closed-class words, lower case: articles and
// determiners, pronouns, prepositions, conjunctions, auxiliary and modal verbs, negation and a few
// frequent adverbs of degree and time, with the Early Modern English forms that Tiny Shakespeare
// uses in their place (thou, thee, thy, thine, ye, hath, doth, dost, art, wilt, shalt, ere, o'er;
// 'tis reads as "tis": a word keeps only its inner apostrophes). Content words (nouns, main verbs, adjectives, names)
// are everything else. Changing the list changes the published tables (docs/gates.md): say so where it changes.
#include <algorithm>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "framework/text/token_class.h"

namespace gattn {

namespace {

constexpr std::string_view kFunctionWords[] = {
    "a",      "about",    "above",      "after",     "again",   "against", "all",    "also",    "am",    "among",
    "an",     "and",      "any",        "are",       "art",     "as",      "at",     "be",      "been",  "before",
    "being",  "below",    "beneath",    "beside",    "between", "beyond",  "both",   "but",     "by",    "can",
    "cannot", "could",    "did",        "didst",     "do",      "does",    "dost",   "doth",    "down",  "during",
    "e'en",   "each",     "either",     "ere",       "even",    "ever",    "every",  "few",     "for",   "from",
    "had",    "hadst",    "has",        "hast",      "hath",    "have",    "having", "he",      "her",   "here",
    "hers",   "herself",  "him",        "himself",   "his",     "how",     "i",      "i'd",     "i'll",  "i'm",
    "if",     "in",       "into",       "is",        "it",      "it's",    "its",    "itself",  "just",  "let",
    "may",    "mayst",    "me",         "might",     "mine",    "more",    "most",   "much",    "must",  "my",
    "myself", "ne'er",    "neither",    "never",     "no",      "nor",     "not",    "now",     "o",     "o'er",
    "of",     "off",      "oft",        "on",        "once",    "one's",   "only",   "onto",    "or",    "other",
    "ought",  "our",      "ours",       "ourselves", "out",     "over",    "own",    "same",    "shall", "shalt",
    "she",    "should",   "shouldst",   "since",     "so",      "some",    "such",   "than",    "that",  "the",
    "thee",   "their",    "theirs",     "them",      "then",    "thence",  "there",  "these",   "they",  "thine",
    "this",   "those",    "thou",       "though",    "through", "thus",    "thy",    "thyself", "till",  "tis",
    "to",     "too",      "toward",     "towards",   "twas",    "under",   "unto",   "until",   "up",    "upon",
    "us",     "very",     "was",        "wast",      "we",      "were",    "wert",   "what",    "when",  "whence",
    "where",  "whether",  "which",      "while",     "whilst",  "who",     "whom",   "whose",   "why",   "will",
    "wilt",   "with",     "within",     "without",   "would",   "wouldst", "ye",     "yet",     "you",   "your",
    "yours",  "yourself", "yourselves", "thither",   "hither",
};

// The list sorted once, for a binary search.
const std::vector<std::string_view>& sorted_function_words() {
  static const std::vector<std::string_view> sorted = [] {
    std::vector<std::string_view> v(std::begin(kFunctionWords), std::end(kFunctionWords));
    std::sort(v.begin(), v.end());
    return v;
  }();
  return sorted;
}

}  // namespace

bool is_function_word(std::string_view word) {
  std::string lower(word);
  for (char& c : lower)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  const std::vector<std::string_view>& words = sorted_function_words();
  return std::binary_search(words.begin(), words.end(), std::string_view(lower));
}

}  // namespace gattn
