// GeneratedDataset: training batches from the run's generator, validation rows from their own streams.
#include "framework/data/generated_dataset.h"

#include <string>

namespace gattn::data_detail {

Batch GeneratedDataset::sample_train(std::int64_t batch_size, std::int64_t block_size, Generator& gen) const {
  if (batch_size <= 0) throw ValueError("sample_train: batch size must be positive, got " + std::to_string(batch_size));
  Batch b = empty_rows(batch_size, block_size);
  for (std::int64_t r = 0; r < batch_size; ++r) fill_row(b, r, block_size, gen);
  return b;
}

std::int64_t GeneratedDataset::eval_windows(std::int64_t /*block_size*/, std::int64_t max_windows) const {
  return max_windows > 0 ? max_windows : kDefaultEvalRows;
}

Batch GeneratedDataset::eval_batch(std::int64_t first_window, std::int64_t count, std::int64_t block_size) const {
  if (first_window < 0 || count <= 0)
    throw ValueError("eval_batch: bad window range start " + std::to_string(first_window) + " count " +
                     std::to_string(count));
  Batch b = empty_rows(count, block_size);
  for (std::int64_t r = 0; r < count; ++r) {
    Generator gen(seed_, kValStream + static_cast<std::uint64_t>(first_window + r));
    fill_row(b, r, block_size, gen);
  }
  return b;
}

void GeneratedDataset::store_row(Batch& b, std::int64_t r, std::int64_t block_size,
                                 const std::vector<std::int32_t>& seq, const std::vector<char>& is_answer) {
  std::int32_t* x = b.x.data<std::int32_t>() + r * block_size;
  std::int32_t* y = b.y.data<std::int32_t>() + r * block_size;
  for (std::int64_t t = 0; t < block_size; ++t) {
    const auto i = static_cast<std::size_t>(t);
    x[t] = seq[i];
    y[t] = is_answer[i + 1] ? seq[i + 1] : -1;
  }
}

}  // namespace gattn::data_detail
