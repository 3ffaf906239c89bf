// BpeModel: the merge table and tokenizers' merge loop.
#include "framework/text/bpe_model.h"

#include <algorithm>

#include "framework/base/errors.h"

namespace gattn {

BpeModel::BpeModel(StringMap<std::int32_t> vocab, const std::vector<std::pair<std::string, std::string>>& merges,
                   const std::string& where)
    : vocab_(std::move(vocab)) {
  std::int32_t largest = -1;
  for (const auto& [token, id] : vocab_) {
    if (id < 0) throw DataError(where + ": the vocabulary gives '" + token + "' the negative id " + std::to_string(id));
    largest = std::max(largest, id);
  }
  tokens_.resize(static_cast<std::size_t>(largest + 1));
  has_token_.assign(tokens_.size(), false);
  for (const auto& [token, id] : vocab_) {
    tokens_[static_cast<std::size_t>(id)] = token;
    has_token_[static_cast<std::size_t>(id)] = true;
  }
  merges_.reserve(merges.size());
  for (std::size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [a, b] = merges[rank];
    const auto ia = id(a), ib = id(b), ir = id(a + b);
    if (!ia || !ib || !ir)
      throw DataError(where + ": merge " + std::to_string(rank) + " ('" + a + "' '" + b + "') names '" +
                      (!ia   ? a
                       : !ib ? b
                             : a + b) +
                      "', which the vocabulary does not have (damaged file?)");
    merges_[key(*ia, *ib)] = Merge{static_cast<std::int32_t>(rank), *ir};
  }
}

std::optional<std::int32_t> BpeModel::id(std::string_view token) const {
  const auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::token(std::int32_t id) const {
  if (id < 0 || id >= size() || !has_token_[static_cast<std::size_t>(id)]) return nullptr;
  return &tokens_[static_cast<std::size_t>(id)];
}

void BpeModel::merge(std::vector<std::int32_t>& symbols) const {
  const auto n = static_cast<std::int32_t>(symbols.size());
  if (n < 2) return;
  // The symbols as a linked list (a merged-away symbol is marked gone) and a min-heap of candidate
  // merges by (rank, position). An entry whose pair has changed since it was pushed is skipped when
  // popped: the pair at its position no longer merges into the same token.
  struct Symbol {
    std::int32_t id, prev, next;
    bool gone;
  };
  struct Candidate {
    std::int32_t rank, pos, result;
  };
  const auto later = [](const Candidate& a, const Candidate& b) {
    return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
  };
  thread_local std::vector<Symbol> sym;
  thread_local std::vector<Candidate> heap;
  sym.resize(static_cast<std::size_t>(n));
  heap.clear();
  for (std::int32_t i = 0; i < n; ++i)
    sym[static_cast<std::size_t>(i)] = {symbols[static_cast<std::size_t>(i)], i - 1, i + 1 < n ? i + 1 : -1, false};
  const auto push = [&](std::int32_t pos, std::int32_t a, std::int32_t b) {
    const auto it = merges_.find(key(a, b));
    if (it == merges_.end()) return;
    heap.push_back({it->second.rank, pos, it->second.result});
    std::push_heap(heap.begin(), heap.end(), later);
  };
  for (std::int32_t i = 0; i + 1 < n; ++i)
    push(i, sym[static_cast<std::size_t>(i)].id, sym[static_cast<std::size_t>(i + 1)].id);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const Candidate top = heap.back();
    heap.pop_back();
    Symbol& left = sym[static_cast<std::size_t>(top.pos)];
    if (left.gone || left.next < 0) continue;
    Symbol& right = sym[static_cast<std::size_t>(left.next)];
    const auto now = merges_.find(key(left.id, right.id));
    if (now == merges_.end() || now->second.result != top.result) continue;
    left.id = top.result;
    right.gone = true;
    left.next = right.next;
    if (right.next >= 0) sym[static_cast<std::size_t>(right.next)].prev = top.pos;
    if (left.prev >= 0) push(left.prev, sym[static_cast<std::size_t>(left.prev)].id, left.id);
    if (left.next >= 0) push(top.pos, left.id, sym[static_cast<std::size_t>(left.next)].id);
  }
  symbols.clear();
  for (std::int32_t i = 0; i >= 0; i = sym[static_cast<std::size_t>(i)].next)
    symbols.push_back(sym[static_cast<std::size_t>(i)].id);
}

}  // namespace gattn
