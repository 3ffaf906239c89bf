// A regular expression of a tokenizer.json (the Split pre-tokenizer's, GPT-2's ByteLevel one),
// compiled by PCRE2 with UTF and Unicode properties (PCRE2_UTF | PCRE2_UCP: \s, \p{L}, \p{N} and
// (?i) mean what they mean in Oniguruma, the engine `tokenizers` uses) and JIT-compiled.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gattn {

class HfRegex {
 public:
  // ValueError naming `where` and PCRE2's reason when the pattern does not compile.
  HfRegex(const std::string& pattern, const std::string& where);
  ~HfRegex();
  HfRegex(const HfRegex&) = delete;
  HfRegex& operator=(const HfRegex&) = delete;

  // The successive non-overlapping matches in `text` (valid UTF-8: the caller checked it) as byte
  // ranges [first, second), searched from the start and after each match as Oniguruma's iterator
  // does (an empty match steps one character on). Safe to call from several threads.
  void find_all(std::string_view text, std::vector<std::pair<std::size_t, std::size_t>>& matches) const;

 private:
  struct Code;
  std::unique_ptr<Code> code_;
};

}  // namespace gattn
