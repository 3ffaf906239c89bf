// `data.kind: synthetic` with a sequence-to-sequence task (docs/seq2seq.md): a source of n random
// content tokens and the target a model must write from it. reverse: the source backwards; sort: its
// tokens in ascending id order; noisy_copy: the source's payload with the distractor tokens mixed into
// it dropped. Drawn from a Generator like the decoder-only tasks (synthetic_dataset.cpp), with a fixed
// validation set from per-sequence Philox streams.
#include <algorithm>
#include <numeric>
#include <vector>

#include "framework/data/generated_dataset.h"
#include "framework/data/seq2seq_batch.h"
#include "framework/data/windowed_dataset.h"

namespace gattn::data_detail {
namespace {

constexpr std::int64_t kReserved = kSeq2SeqFirstContent;  // pad, start, end
constexpr std::int64_t kDefaultContent = 16;
constexpr std::int64_t kDefaultDistractorIds = 8;  // noisy_copy: a third of its default non-reserved ids
constexpr std::int64_t kDefaultLength = 8;

enum class Task { reverse, sort, noisy_copy };

class Seq2SeqSyntheticDataset : public GeneratedDataset {
 public:
  Seq2SeqSyntheticDataset(const DataOptions& options, std::int64_t block_size)
      : GeneratedDataset(options.seed), options_(options) {
    if (options.task == "reverse")
      task_ = Task::reverse;
    else if (options.task == "sort")
      task_ = Task::sort;
    else if (options.task == "noisy_copy")
      task_ = Task::noisy_copy;
    else
      throw DataError("data.task must be reverse, sort or noisy_copy for a seq2seq task, got '" + options.task + "'");
    const bool noisy = task_ == Task::noisy_copy;

    vocab_ =
        options.vocab_size > 0 ? options.vocab_size : kReserved + kDefaultContent + (noisy ? kDefaultDistractorIds : 0);
    // noisy_copy: the top third of the non-reserved ids are distractors, disjoint from the payload's
    // (as noisy_recall's), so which tokens to drop is learnable from the token alone.
    n_distractor_ids_ = noisy ? (vocab_ - kReserved) / 3 : 0;
    n_content_ = vocab_ - kReserved - n_distractor_ids_;
    if (n_content_ < 2 || (noisy && n_distractor_ids_ < 1))
      throw DataError("synthetic task " + options.task + ": data.vocab_size " + std::to_string(vocab_) +
                      " is too small (needs " + std::to_string(kReserved) +
                      " reserved ids (pad, start, end) and at least 2 content ids" +
                      (noisy ? " and 1 distractor id: at least 6)" : ": at least 5)"));

    if (block_size <= 0) throw DataError("block_size must be positive, got " + std::to_string(block_size));
    // Defaults that fit the block: n + 1 decoder tokens and n (+ distractors) source tokens.
    const std::int64_t room =
        noisy ? (options.n_distractors > 0 ? block_size - options.n_distractors : block_size / 2) : block_size;
    length_ = options.n_pairs > 0 ? options.n_pairs : std::min({kDefaultLength, block_size - 1, room});
    distractors_ = noisy ? (options.n_distractors > 0 ? options.n_distractors : length_) : 0;
    check_fits(block_size);
  }

  std::int64_t vocab_size() const override { return vocab_; }
  bool seq2seq() const override { return true; }

  std::string describe() const override {
    std::string s = "synthetic ";
    s.append(options_.task).append(" (seq2seq): vocab ").append(std::to_string(vocab_)).append(", sources of ");
    s.append(std::to_string(length_));
    if (task_ == Task::noisy_copy) s.append(" payload + ").append(std::to_string(distractors_)).append(" distractor");
    s.append(" tokens, targets of ").append(std::to_string(length_)).append(" tokens + end");
    return s;
  }

 private:
  std::int64_t source_length() const { return length_ + distractors_; }

  Batch empty_rows(std::int64_t rows, std::int64_t block_size) const override {
    check_fits(block_size);
    return empty_seq2seq_batch(rows, source_length(), length_);
  }

  // Every sequence has the same lengths, so one check up front covers them all.
  void check_fits(std::int64_t block_size) const {
    if (length_ >= 1 && source_length() <= block_size && length_ + 1 <= block_size) return;
    const bool noisy = task_ == Task::noisy_copy;
    std::string msg = "synthetic task " + options_.task + ": a source of ";
    if (noisy)
      msg += std::to_string(length_) + " + " + std::to_string(distractors_) +
             " tokens (data.n_pairs + data.n_distractors)";
    else
      msg += std::to_string(length_) + " tokens (data.n_pairs)";
    msg += " and a target of " + std::to_string(length_ + 1) + " (data.n_pairs + end) need model.block_size >= " +
           std::to_string(std::max({source_length(), length_ + 1, std::int64_t{2}})) + ", got " +
           std::to_string(block_size) + " (lower data.n_pairs" + (noisy ? " / data.n_distractors" : "") +
           " or raise model.block_size)";
    throw DataError(msg);
  }

  std::int32_t content(Generator& gen) const {
    return static_cast<std::int32_t>(kReserved + random_index(gen, n_content_));
  }

  // Draws one source and writes it and its target into row r.
  void fill_row(Batch& b, std::int64_t r, std::int64_t /*block_size*/, Generator& gen) const override {
    const auto n = static_cast<std::size_t>(length_);
    std::vector<std::int32_t> payload(n);
    for (auto& t : payload) t = content(gen);
    std::vector<std::int32_t> source, target;
    switch (task_) {
      case Task::reverse:
        source = payload;
        target.assign(payload.rbegin(), payload.rend());
        break;
      case Task::sort:
        source = payload;
        target = payload;
        std::sort(target.begin(), target.end());
        break;
      case Task::noisy_copy: {
        // The distractors' positions: a uniformly random subset of the source's slots (a partial
        // Fisher-Yates shuffle); the payload fills the other slots in order.
        const std::int64_t slots = source_length();
        std::vector<std::int64_t> order(static_cast<std::size_t>(slots));
        std::iota(order.begin(), order.end(), std::int64_t{0});
        std::vector<char> is_distractor(order.size(), 0);
        for (std::int64_t i = 0; i < distractors_; ++i) {
          const auto at = static_cast<std::size_t>(i);
          std::swap(order[at], order[at + static_cast<std::size_t>(random_index(gen, slots - i))]);
          is_distractor[static_cast<std::size_t>(order[at])] = 1;
        }
        const auto first_distractor = static_cast<std::int32_t>(kReserved + n_content_);
        std::size_t next = 0;
        for (char d : is_distractor)
          source.push_back(d ? first_distractor + static_cast<std::int32_t>(random_index(gen, n_distractor_ids_))
                             : payload[next++]);
        target = payload;
        break;
      }
    }
    put_seq2seq_row(b, r, source.data(), static_cast<std::int64_t>(source.size()), target.data(),
                    static_cast<std::int64_t>(target.size()));
  }

  DataOptions options_;
  Task task_ = Task::reverse;
  std::int64_t vocab_ = 0, n_content_ = 0, n_distractor_ids_ = 0;
  std::int64_t length_ = 0;       // n: content tokens per source, the target's length
  std::int64_t distractors_ = 0;  // noisy_copy: distractor tokens per source
};

}  // namespace

bool is_seq2seq_task(const std::string& task) { return task == "reverse" || task == "sort" || task == "noisy_copy"; }

std::unique_ptr<Dataset> make_seq2seq_synthetic_dataset(const DataOptions& options, std::int64_t block_size) {
  return std::make_unique<Seq2SeqSyntheticDataset>(options, block_size);
}

}  // namespace gattn::data_detail
