// `data.kind: synthetic`: copy, associative recall and noisy recall sequences generated on the fly
// from a Generator; the validation set is a fixed family of sequences from their own Philox streams.
// The sequence-to-sequence tasks are in seq2seq_synthetic_dataset.cpp.
#include <algorithm>
#include <numeric>

#include "framework/data/generated_dataset.h"
#include "framework/data/windowed_dataset.h"

namespace gattn::data_detail {
namespace {

// Special ids below every content token.
constexpr std::int32_t kPad = 0;
constexpr std::int32_t kSeparator = 1;  // copy: ends the tokens to copy
constexpr std::int32_t kQuery = 2;      // recall: the next token is the key asked for
constexpr std::int64_t kSpecials = 3;
constexpr std::int64_t kDefaultContent = 32;
constexpr std::int64_t kDefaultDistractors = 16;
constexpr std::int64_t kDefaultPairs = 8;

enum class Task { copy, assoc_recall, noisy_recall };

// The token counts of one sequence of a task at a given block size.
struct Layout {
  std::int64_t items = 0;        // copy: tokens to copy; recall: key-value pairs
  std::int64_t distractors = 0;  // noisy_recall only
};

class SyntheticDataset : public GeneratedDataset {
 public:
  SyntheticDataset(const DataOptions& options, std::int64_t block_size)
      : GeneratedDataset(options.seed), options_(options), block_size_(block_size) {
    if (options.task == "copy")
      task_ = Task::copy;
    else if (options.task == "assoc_recall")
      task_ = Task::assoc_recall;
    else if (options.task == "noisy_recall")
      task_ = Task::noisy_recall;
    else
      throw DataError("data.task must be copy, assoc_recall, noisy_recall, mqar, reverse, sort or noisy_copy, got '" +
                      options.task + "'");

    const bool noisy = task_ == Task::noisy_recall;
    vocab_ =
        options.vocab_size > 0 ? options.vocab_size : kSpecials + kDefaultContent + (noisy ? kDefaultDistractors : 0);
    // noisy_recall: the top third of the non-special ids are distractors, disjoint from keys and values.
    n_distractor_ids_ = noisy ? (vocab_ - kSpecials) / 3 : 0;
    n_content_ = vocab_ - kSpecials - n_distractor_ids_;
    if (n_content_ < 2 || (noisy && n_distractor_ids_ < 1))
      throw DataError("synthetic task " + options.task + ": data.vocab_size " + std::to_string(vocab_) +
                      " is too small (needs " + std::to_string(kSpecials) + " special ids and room for content" +
                      (noisy ? " and distractor ids)" : ")"));
    layout_for(block_size);  // throws when the task does not fit the block
  }

  std::int64_t vocab_size() const override { return vocab_; }

  std::string describe() const override {
    const Layout l = layout_for(block_size_);
    std::string s = "synthetic ";
    s.append(options_.task).append(": vocab ").append(std::to_string(vocab_)).append(", ");
    s.append(std::to_string(l.items)).append(task_ == Task::copy ? " tokens to copy" : " pairs");
    if (task_ == Task::noisy_recall) s.append(", ").append(std::to_string(l.distractors)).append(" distractors");
    s.append(" per sequence of ").append(std::to_string(block_size_ + 1)).append(" tokens");
    return s;
  }

 private:
  Layout layout_for(std::int64_t block_size) const {
    if (block_size <= 0) throw DataError("block_size must be positive, got " + std::to_string(block_size));
    const std::int64_t length = block_size + 1;  // tokens per sequence: T inputs plus the last target
    Layout l;
    std::int64_t needed = 0;
    switch (task_) {
      case Task::copy:
        l.items = options_.n_pairs > 0 ? options_.n_pairs : block_size / 2;
        needed = 2 * l.items + 1;
        break;
      case Task::assoc_recall:
        l.items = options_.n_pairs > 0 ? options_.n_pairs : std::min(kDefaultPairs, (block_size - 2) / 2);
        needed = 2 * l.items + 3;
        break;
      case Task::noisy_recall:
        // The default leaves about half the block to distractors, so there is noise to filter.
        l.items = options_.n_pairs > 0 ? options_.n_pairs : std::min(kDefaultPairs, (block_size - 2) / 4);
        l.distractors =
            options_.n_distractors > 0 ? options_.n_distractors : std::max<std::int64_t>(length - (2 * l.items + 3), 0);
        needed = 2 * l.items + 3 + l.distractors;
        break;
    }
    if (l.items < 1 || needed > length)
      throw DataError("synthetic task " + options_.task + " needs " +
                      std::to_string(std::max<std::int64_t>(needed, 4)) + " tokens per sequence but block_size " +
                      std::to_string(block_size) + " gives " + std::to_string(length) +
                      " (lower data.n_pairs / data.n_distractors or raise block_size)");
    if (task_ != Task::copy && l.items > n_content_)
      throw DataError("synthetic task " + options_.task + ": " + std::to_string(l.items) +
                      " distinct keys need data.vocab_size larger than " + std::to_string(vocab_));
    return l;
  }

  Batch empty_rows(std::int64_t rows, std::int64_t block_size) const override {
    layout_for(block_size);  // throws when the task does not fit the block
    return {Tensor::empty({rows, block_size}, DType::i32), Tensor::empty({rows, block_size}, DType::i32)};
  }

  std::int32_t content(Generator& gen) const {
    return static_cast<std::int32_t>(kSpecials + random_index(gen, n_content_));
  }

  // Writes one sequence of T+1 tokens into row r: x = seq[0, T), y[t] = seq[t+1] where seq[t+1] is an
  // answer, else -1.
  void fill_row(Batch& b, std::int64_t r, std::int64_t block_size, Generator& gen) const override {
    const Layout l = layout_for(block_size);
    const auto length = static_cast<std::size_t>(block_size + 1);
    std::vector<std::int32_t> seq;
    std::vector<char> is_answer;
    seq.reserve(length);
    is_answer.reserve(length);
    auto push = [&](std::int32_t token, bool answer) {
      seq.push_back(token);
      is_answer.push_back(answer);
    };
    if (task_ == Task::copy) {
      std::vector<std::int32_t> items(static_cast<std::size_t>(l.items));
      for (auto& t : items) {
        t = content(gen);
        push(t, false);
      }
      push(kSeparator, false);
      for (auto t : items) push(t, true);
    } else {
      // Distinct keys: a partial Fisher-Yates shuffle of the content ids.
      std::vector<std::int32_t> ids(static_cast<std::size_t>(n_content_));
      std::iota(ids.begin(), ids.end(), static_cast<std::int32_t>(kSpecials));
      std::vector<std::int32_t> keys(static_cast<std::size_t>(l.items)), values(keys.size());
      for (std::size_t i = 0; i < keys.size(); ++i) {
        std::swap(ids[i],
                  ids[i + static_cast<std::size_t>(random_index(gen, n_content_ - static_cast<std::int64_t>(i)))]);
        keys[i] = ids[i];
        values[i] = content(gen);
      }
      // Distractors go into the l.items + 1 gaps: before each pair and before the query.
      std::vector<std::int64_t> per_gap(keys.size() + 1, 0);
      for (std::int64_t d = 0; d < l.distractors; ++d)
        ++per_gap[static_cast<std::size_t>(random_index(gen, l.items + 1))];
      const std::int32_t first_distractor = static_cast<std::int32_t>(kSpecials + n_content_);
      auto push_distractors = [&](std::size_t gap) {
        for (std::int64_t d = 0; d < per_gap[gap]; ++d)
          push(first_distractor + static_cast<std::int32_t>(random_index(gen, n_distractor_ids_)), false);
      };
      for (std::size_t i = 0; i < keys.size(); ++i) {
        push_distractors(i);
        push(keys[i], false);
        push(values[i], false);
      }
      push_distractors(keys.size());
      const auto asked = static_cast<std::size_t>(random_index(gen, l.items));
      push(kQuery, false);
      push(keys[asked], false);
      push(values[asked], true);
    }
    while (seq.size() < length) push(kPad, false);

    store_row(b, r, block_size, seq, is_answer);
  }

  DataOptions options_;
  std::int64_t block_size_;
  Task task_ = Task::copy;
  std::int64_t vocab_ = 0, n_content_ = 0, n_distractor_ids_ = 0;
};

}  // namespace

std::unique_ptr<Dataset> make_synthetic_dataset(const DataOptions& options, std::int64_t block_size) {
  if (is_seq2seq_task(options.task)) return make_seq2seq_synthetic_dataset(options, block_size);
  if (options.task == "mqar") return make_mqar_dataset(options, block_size);
  return std::make_unique<SyntheticDataset>(options, block_size);
}

}  // namespace gattn::data_detail
