// A BPE model as Hugging Face's tokenizers applies it: a vocabulary (token → id) and merges in
// rank order, each joining two tokens into a third that the vocabulary has. Merging a word's
// symbols takes the pair of lowest rank first, the leftmost of equal ranks, until no pair of
// adjacent symbols has a merge: tokenizers' Word::merge_all, step for step, so ids match exactly.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gattn {

// An unordered_map<std::string, V> that a std::string_view looks up without a copy.
struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
template <class V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

class BpeModel {
 public:
  // `merges` in rank order (rank = index). DataError naming `where` when a merge names a token the
  // vocabulary lacks, or joins two tokens into one it lacks. A pair listed twice takes its last
  // rank, as tokenizers does.
  BpeModel(StringMap<std::int32_t> vocab, const std::vector<std::pair<std::string, std::string>>& merges,
           const std::string& where);

  std::optional<std::int32_t> id(std::string_view token) const;
  // The token of `id`, nullptr for an id the vocabulary does not have.
  const std::string* token(std::int32_t id) const;
  // One more than the largest id.
  std::int64_t size() const { return static_cast<std::int64_t>(tokens_.size()); }
  const StringMap<std::int32_t>& vocab() const { return vocab_; }

  // Merges the symbols (ids) of one word in place.
  void merge(std::vector<std::int32_t>& symbols) const;

 private:
  struct Merge {
    std::int32_t rank, result;
  };
  static std::uint64_t key(std::int32_t a, std::int32_t b) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) | static_cast<std::uint32_t>(b);
  }
  StringMap<std::int32_t> vocab_;
  std::vector<std::string> tokens_;  // by id; "" for ids without a token
  std::vector<bool> has_token_;
  std::unordered_map<std::uint64_t, Merge> merges_;
};

}  // namespace gattn
