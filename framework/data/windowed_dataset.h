// Internal to framework/data: the window sampling shared by text and token shards, the random-index
// helper, and the factories make_dataset dispatches to.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "framework/data/dataset.h"
#include "framework/data/token_source.h"

namespace gattn::data_detail {

// A uniform index in [0, n) from gen; exact enough for corpora past 2^31 tokens too.
std::int64_t random_index(Generator& gen, std::int64_t n);

// A dataset that is one token stream per split. Training windows start anywhere in the train split;
// eval windows follow docs/config.md: T+1 tokens starting at 0, T, 2T, ... of the val split. Windows
// come from the splits' TokenSource, so they are the same whether the tokens are in memory or mapped.
class WindowedDataset : public Dataset {
 public:
  Batch sample_train(std::int64_t batch_size, std::int64_t block_size, Generator& gen) const override;
  std::int64_t eval_windows(std::int64_t block_size, std::int64_t max_windows) const override;
  Batch eval_batch(std::int64_t first_window, std::int64_t count, std::int64_t block_size) const override;

 protected:
  // Throws DataError naming source when either split cannot hold one window of block_size + 1 tokens.
  void check_fits(std::int64_t block_size) const;

  // Set by the subclass's constructor, before check_fits.
  std::unique_ptr<const TokenSource> train_, val_;
  std::string source_;  // the file or pattern the tokens came from, for messages
};

std::unique_ptr<Dataset> make_text_dataset(const DataOptions& options, std::int64_t block_size);
std::unique_ptr<Dataset> make_token_dataset(const DataOptions& options, std::int64_t block_size);
std::unique_ptr<Dataset> make_synthetic_dataset(const DataOptions& options, std::int64_t block_size);
// The sequence-to-sequence tasks among data.task (reverse, sort, noisy_copy), which
// make_synthetic_dataset hands to make_seq2seq_synthetic_dataset.
bool is_seq2seq_task(const std::string& task);
std::unique_ptr<Dataset> make_seq2seq_synthetic_dataset(const DataOptions& options, std::int64_t block_size);
// data.task mqar (framework/data/mqar_dataset.cpp), which make_synthetic_dataset hands on.
std::unique_ptr<Dataset> make_mqar_dataset(const DataOptions& options, std::int64_t block_size);
std::unique_ptr<Dataset> make_pair_dataset(const DataOptions& options, std::int64_t block_size);

}  // namespace gattn::data_detail
