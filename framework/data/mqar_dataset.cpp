// `data.task: mqar`: multi-query associative recall, the Zoology benchmark (Arora et al. 2023,
// "Zoology: Measuring and Improving Recall in Efficient Language Models"). A sequence of T + 1
// tokens opens with n key–value pairs k₁ v₁ … kₙ vₙ (distinct keys from the lower half of the
// content ids, values from the upper half), then every key is asked once, in random order, as a
// query pair kᵢ vᵢ at an even offset of the rest; the model must predict vᵢ after kᵢ. The query
// offsets follow Zoology's power law (slot s of the S = (T + 1 − 2n)/2 query slots has weight
// s^(a − 1), a = 0.01), so most queries come soon after the pairs and some far away; the slots
// left over hold the pad id 0. Accuracy is over the n answers. One difference from Zoology's
// generator: the answer is also the next input token, as in gattn's other recall tasks (Zoology
// leaves the pad there); no later query can use it, since each key is asked once.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "framework/data/generated_dataset.h"
#include "framework/data/windowed_dataset.h"

namespace gattn::data_detail {
namespace {

constexpr std::int32_t kPad = 0;              // the filler between queries
constexpr std::int64_t kSpecials = 1;         // ids below the content ids
constexpr std::int64_t kDefaultVocab = 8192;  // Zoology's (a config always names one: data.vocab_size)
constexpr double kPowerLawA = 0.01;           // Zoology's power_a

// A uniform double in (0, 1) from gen (53 bits).
double uniform_open(Generator& gen) {
  return (static_cast<double>(random_index(gen, std::int64_t{1} << 53)) + 0.5) / 9007199254740992.0;
}

class MqarDataset : public GeneratedDataset {
 public:
  MqarDataset(const DataOptions& options, std::int64_t block_size)
      : GeneratedDataset(options.seed), options_(options), block_size_(block_size) {
    vocab_ = options.vocab_size > 0 ? options.vocab_size : kDefaultVocab;
    pairs_for(block_size);  // throws when the task does not fit the block or the vocabulary
  }

  std::int64_t vocab_size() const override { return vocab_; }

  std::string describe() const override {
    return "synthetic mqar: vocab " + std::to_string(vocab_) + ", " + std::to_string(pairs_for(block_size_)) +
           " key-value pairs, each queried once, per sequence of " + std::to_string(block_size_ + 1) + " tokens";
  }

 private:
  // The keys take content ids [1, 1 + K), the values [1 + K, vocab): K = half the content ids.
  std::int64_t key_ids() const { return (vocab_ - kSpecials) / 2; }
  std::int64_t value_ids() const { return vocab_ - kSpecials - key_ids(); }

  // The pairs per sequence at this block size: data.n_pairs, or one per 16 tokens by default (at
  // least one). ValueError (exit 2) naming data.n_pairs / data.vocab_size when they do not fit.
  std::int64_t pairs_for(std::int64_t block_size) const {
    if (block_size <= 0) throw ValueError("block_size must be positive, got " + std::to_string(block_size));
    const std::int64_t length = block_size + 1;
    const std::int64_t n = options_.n_pairs > 0 ? options_.n_pairs : std::max<std::int64_t>(1, length / 16);
    if (4 * n > length)
      throw ValueError("data.n_pairs " + std::to_string(n) +
                       ": mqar needs 4 tokens per pair (the pair and its query) " + "but a sequence has " +
                       std::to_string(length) + " (block_size + 1): at most " + std::to_string(length / 4) +
                       " pairs fit, or raise model.block_size");
    if (key_ids() < n || value_ids() < 1)
      throw ValueError("data.vocab_size " + std::to_string(vocab_) + ": mqar's " + std::to_string(n) +
                       " distinct keys need at least " + std::to_string(2 * n + kSpecials) +
                       " ids (half of the non-pad ids are keys, half values)");
    return n;
  }

  Batch empty_rows(std::int64_t rows, std::int64_t block_size) const override {
    pairs_for(block_size);
    return {Tensor::empty({rows, block_size}, DType::i32), Tensor::empty({rows, block_size}, DType::i32)};
  }

  void fill_row(Batch& b, std::int64_t r, std::int64_t block_size, Generator& gen) const override {
    const std::int64_t n = pairs_for(block_size), length = block_size + 1;
    std::vector<std::int32_t> seq(static_cast<std::size_t>(length), kPad);
    std::vector<char> is_answer(seq.size(), 0);
    // Distinct keys: a partial Fisher–Yates shuffle of the key ids; values drawn freely.
    std::vector<std::int32_t> ids(static_cast<std::size_t>(key_ids()));
    std::iota(ids.begin(), ids.end(), static_cast<std::int32_t>(kSpecials));
    std::vector<std::int32_t> keys(static_cast<std::size_t>(n)), values(keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i) {
      std::swap(ids[i], ids[i + static_cast<std::size_t>(random_index(gen, key_ids() - static_cast<std::int64_t>(i)))]);
      keys[i] = ids[i];
      values[i] = static_cast<std::int32_t>(kSpecials + key_ids() + random_index(gen, value_ids()));
      seq[2 * i] = keys[i];
      seq[2 * i + 1] = values[i];
    }
    // n of the S query slots, weighted s^(a−1) without replacement (Efraimidis–Spirakis: the n
    // largest u^(1/w)), compared in logs: ln(u)/w.
    const std::int64_t first = 2 * n, slots = (length - first) / 2;
    std::vector<std::pair<double, std::int64_t>> ranked(static_cast<std::size_t>(slots));
    for (std::int64_t s = 0; s < slots; ++s) {
      const double weight = std::pow(static_cast<double>(s + 1), kPowerLawA - 1.0);
      ranked[static_cast<std::size_t>(s)] = {std::log(uniform_open(gen)) / weight, s};
    }
    std::partial_sort(ranked.begin(), ranked.begin() + n, ranked.end(),
                      [](const auto& a, const auto& b) { return a.first > b.first; });
    // The keys in random order over the chosen slots.
    std::vector<std::size_t> order(keys.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    for (std::size_t i = order.size(); i > 1; --i)
      std::swap(order[i - 1], order[static_cast<std::size_t>(random_index(gen, static_cast<std::int64_t>(i)))]);
    for (std::size_t q = 0; q < order.size(); ++q) {
      const auto at = static_cast<std::size_t>(first + 2 * ranked[q].second);
      seq[at] = keys[order[q]];
      seq[at + 1] = values[order[q]];
      is_answer[at + 1] = 1;
    }
    store_row(b, r, block_size, seq, is_answer);
  }

  DataOptions options_;
  std::int64_t block_size_;
  std::int64_t vocab_ = 0;
};

}  // namespace

std::unique_ptr<Dataset> make_mqar_dataset(const DataOptions& options, std::int64_t block_size) {
  return std::make_unique<MqarDataset>(options, block_size);
}

}  // namespace gattn::data_detail
