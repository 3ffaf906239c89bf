// Internal to framework/data: what every generated (synthetic) dataset shares. Training rows come from
// the run's data generator; the validation set is a fixed family of rows, row i drawn from its own
// Philox stream (data seed, kValStream + i), so it is the same whichever batch or rank asks for it,
// never overlaps training draws and does not depend on them. A task supplies the batch layout and how
// to draw one row.
#pragma once
#include <cstdint>
#include <vector>

#include "framework/data/dataset.h"

namespace gattn::data_detail {

class GeneratedDataset : public Dataset {
 public:
  Batch sample_train(std::int64_t batch_size, std::int64_t block_size, Generator& gen) const final;
  // max_windows validation rows (0: kDefaultEvalRows).
  std::int64_t eval_windows(std::int64_t block_size, std::int64_t max_windows) const final;
  Batch eval_batch(std::int64_t first_window, std::int64_t count, std::int64_t block_size) const final;
  bool reports_accuracy() const override { return true; }

  static constexpr std::int64_t kDefaultEvalRows = 256;
  // Far above the small stream ids training derives from the seed.
  static constexpr std::uint64_t kValStream = 0x7661'6c00'0000'0000ULL;  // "val" in the top bytes

 protected:
  explicit GeneratedDataset(std::uint64_t seed) : seed_(seed) {}
  // An empty batch of `rows` at block_size; throws DataError when the task does not fit the block.
  virtual Batch empty_rows(std::int64_t rows, std::int64_t block_size) const = 0;
  // Draws one example from gen into row r of b.
  virtual void fill_row(Batch& b, std::int64_t r, std::int64_t block_size, Generator& gen) const = 0;
  // Writes a sequence of block_size + 1 tokens into row r of b: x = seq[0, T), and y[t] = seq[t + 1]
  // where that token is an answer (is_answer[t + 1]), else −1, so the loss counts the answers only.
  static void store_row(Batch& b, std::int64_t r, std::int64_t block_size, const std::vector<std::int32_t>& seq,
                        const std::vector<char>& is_answer);

 private:
  std::uint64_t seed_;
};

}  // namespace gattn::data_detail
