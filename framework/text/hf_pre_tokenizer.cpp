// HfPreTokenizer: tokenizer.json's pre_tokenizer read, and its steps applied.
#include "framework/text/hf_pre_tokenizer.h"

#include <algorithm>
#include <utility>

#include "core/tensor/error.h"

namespace gattn {

namespace {

using nlohmann::json;

const json& field(const json& spec, const char* name, const std::string& where) {
  if (!spec.contains(name)) throw ValueError(where + " has no \"" + name + "\"");
  return spec[name];
}

bool flag(const json& spec, const char* name, bool fallback, const std::string& where) {
  if (!spec.contains(name) || spec[name].is_null()) return fallback;
  if (!spec[name].is_boolean()) throw ValueError(where + ": \"" + name + "\" is not true or false");
  return spec[name].get<bool>();
}

}  // namespace

HfPreTokenizer::HfPreTokenizer(const json& spec, const std::string& where) {
  if (!spec.is_null()) add(spec, where + " pre_tokenizer");
}

HfPreTokenizer::~HfPreTokenizer() = default;
HfPreTokenizer::HfPreTokenizer(HfPreTokenizer&&) noexcept = default;

void HfPreTokenizer::add(const json& spec, const std::string& where) {
  if (!spec.is_object() || !spec.contains("type") || !spec["type"].is_string())
    throw ValueError(where + " is not an object with a \"type\"");
  const std::string type = spec["type"].get<std::string>();
  if (type == "Sequence") {
    const json& list = field(spec, "pretokenizers", where);
    if (!list.is_array()) throw ValueError(where + ": \"pretokenizers\" is not a list");
    for (std::size_t i = 0; i < list.size(); ++i) add(list[i], where + " step " + std::to_string(i));
    return;
  }
  Step step;
  if (type == "ByteLevel") {
    step.byte_level = true;
    step.add_prefix_space = flag(spec, "add_prefix_space", true, where);
    if (flag(spec, "use_regex", true, where)) step.regex = std::make_shared<const HfRegex>(kGpt2Pattern, where);
  } else if (type == "Split") {
    const json& pattern = field(spec, "pattern", where);
    if (pattern.is_object() && pattern.contains("Regex") && pattern["Regex"].is_string())
      step.regex = std::make_shared<const HfRegex>(pattern["Regex"].get<std::string>(), where);
    else if (pattern.is_object() && pattern.contains("String") && pattern["String"].is_string())
      step.literal = pattern["String"].get<std::string>();
    else
      throw ValueError(where + ": \"pattern\" is neither {\"Regex\": …} nor {\"String\": …}");
    if (step.literal.empty() && !step.regex) throw ValueError(where + ": the Split pattern is an empty string");
    const json& behavior = field(spec, "behavior", where);
    const std::string b = behavior.is_string() ? behavior.get<std::string>() : "";
    if (b == "Removed")
      step.behavior = Behavior::removed;
    else if (b == "Isolated")
      step.behavior = Behavior::isolated;
    else if (b == "MergedWithPrevious")
      step.behavior = Behavior::merged_with_previous;
    else if (b == "MergedWithNext")
      step.behavior = Behavior::merged_with_next;
    else if (b == "Contiguous")
      step.behavior = Behavior::contiguous;
    else
      throw ValueError(where + ": unknown Split behavior " + behavior.dump());
    step.invert = flag(spec, "invert", false, where);
  } else {
    throw ValueError(where + " is a " + type +
                     " pre-tokenizer, which gattn does not implement (it reads Split and ByteLevel, alone or in a "
                     "Sequence: GPT-2's, Llama 3's and Qwen's)");
  }
  steps_.push_back(std::move(step));
}

void HfPreTokenizer::apply(const Step& step, std::string_view piece, std::vector<std::string_view>& out,
                           std::deque<std::string>& arena) {
  if (step.byte_level && step.add_prefix_space && piece.substr(0, 1) != " ") {
    std::string& spaced = arena.emplace_back();
    spaced.reserve(piece.size() + 1);
    spaced.push_back(' ');
    spaced.append(piece);
    piece = spaced;
  }
  if (step.byte_level && !step.regex) {
    out.push_back(piece);
    return;
  }
  // The piece as consecutive ranges, each a match of the pattern or the text between two.
  thread_local std::vector<std::pair<std::size_t, std::size_t>> found;
  if (step.regex) {
    step.regex->find_all(piece, found);
  } else {
    found.clear();
    for (std::size_t at = piece.find(step.literal); at != std::string_view::npos;
         at = piece.find(step.literal, at + step.literal.size()))
      found.emplace_back(at, at + step.literal.size());
  }
  struct Range {
    std::size_t begin, end;
    bool match;
  };
  std::vector<Range> ranges;
  std::size_t prev = 0;
  for (const auto& [begin, end] : found) {
    if (prev != begin) ranges.push_back({prev, begin, step.invert});
    ranges.push_back({begin, end, !step.invert});
    prev = end;
  }
  if (prev != piece.size()) ranges.push_back({prev, piece.size(), step.invert});
  // tokenizers' SplitDelimiterBehavior, on (range, is-match) pairs; `keep` false removes a range.
  std::vector<std::pair<Range, bool>> kept;
  bool previous_match = false;
  switch (step.behavior) {
    case Behavior::isolated:
      for (const Range& r : ranges) kept.push_back({r, true});
      break;
    case Behavior::removed:
      for (const Range& r : ranges) kept.push_back({r, !r.match});
      break;
    case Behavior::contiguous:
      for (const Range& r : ranges) {
        if (r.match == previous_match && !kept.empty())
          kept.back().first.end = r.end;
        else
          kept.push_back({r, true});
        previous_match = r.match;
      }
      break;
    case Behavior::merged_with_previous:
      for (const Range& r : ranges) {
        if (r.match && !previous_match && !kept.empty())
          kept.back().first.end = r.end;
        else
          kept.push_back({r, true});
        previous_match = r.match;
      }
      break;
    case Behavior::merged_with_next:
      for (auto it = ranges.rbegin(); it != ranges.rend(); ++it) {
        if (it->match && !previous_match && !kept.empty())
          kept.back().first.begin = it->begin;
        else
          kept.push_back({*it, true});
        previous_match = it->match;
      }
      std::reverse(kept.begin(), kept.end());
      break;
  }
  for (const auto& [r, keep] : kept)
    if (keep && r.end > r.begin) out.push_back(piece.substr(r.begin, r.end - r.begin));
}

void HfPreTokenizer::split(std::string_view text, std::vector<std::string_view>& words,
                           std::deque<std::string>& arena) const {
  words.clear();
  if (text.empty()) return;
  words.push_back(text);
  std::vector<std::string_view> next;
  for (const Step& step : steps_) {
    next.clear();
    for (std::string_view piece : words) apply(step, piece, next, arena);
    words.swap(next);
  }
}

}  // namespace gattn
