// The pre-tokenizer of a byte-level tokenizer.json: how a normalized piece of text is cut into the
// words BPE merges within. The steps gattn implements are those of GPT-2, Llama 3 and Qwen's files:
// Split (a regex or a literal, with its behavior — Isolated, Removed, MergedWithPrevious,
// MergedWithNext, Contiguous — and invert) and ByteLevel (add_prefix_space; use_regex: GPT-2's
// regex), alone or in a Sequence. Each step cuts every piece the steps before it made, as
// tokenizers' PreTokenizedString::split does; empty pieces are dropped.
#pragma once
#include <deque>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "framework/text/hf_regex.h"

namespace gattn {

class HfPreTokenizer {
 public:
  // `spec` is tokenizer.json's "pre_tokenizer" (null: the text is one word). ValueError naming
  // `where` and the type for a pre-tokenizer gattn does not implement (Metaspace, Whitespace,
  // Digits, BertPreTokenizer, …) or a bad field.
  HfPreTokenizer(const nlohmann::json& spec, const std::string& where);
  ~HfPreTokenizer();
  HfPreTokenizer(HfPreTokenizer&&) noexcept;

  // The words of `text`, in order. Words point into `text` or, when a step prepended a space, into
  // `arena`, which must outlive them.
  void split(std::string_view text, std::vector<std::string_view>& words, std::deque<std::string>& arena) const;

 private:
  enum class Behavior { removed, isolated, merged_with_previous, merged_with_next, contiguous };
  struct Step {
    bool byte_level = false;
    std::shared_ptr<const HfRegex> regex;  // the Split regex, or ByteLevel's when use_regex
    std::string literal;                   // a Split on a string
    Behavior behavior = Behavior::isolated;
    bool invert = false;
    bool add_prefix_space = false;
  };
  void add(const nlohmann::json& spec, const std::string& where);
  static void apply(const Step& step, std::string_view piece, std::vector<std::string_view>& out,
                    std::deque<std::string>& arena);
  std::vector<Step> steps_;
};

// GPT-2's pre-tokenizer regex, which ByteLevel with use_regex applies.
inline constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

}  // namespace gattn
