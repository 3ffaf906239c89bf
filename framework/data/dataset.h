// Datasets behind `data.kind` (docs/config.md): char-level text, llm.c token shards, synthetic tasks and
// source–target pairs for encoder–decoder models (docs/seq2seq.md), all drawing their randomness from a Generator so
// runs are reproducible and resumable.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor/random.h"
#include "core/tensor/tensor.h"
#include "framework/base/errors.h"
#include "framework/data/seq2seq_tokens.h"
#include "framework/text/tokenizer.h"

namespace gattn {

// The `data.*` config section as plain values (the config layer fills it and validates names).
struct DataOptions {
  std::string kind;  // text | tokens | synthetic | pairs
  std::string path;  // text, pairs: a file; tokens: a glob pattern or a directory of .bin shards
  // synthetic: copy | assoc_recall | noisy_recall | mqar, or the seq2seq tasks reverse | sort | noisy_copy
  std::string task;
  std::string tokenizer;  // pairs: a `gattn tokenize train` directory (or tokenizer.model); "": byte-level
  // synthetic: the task's vocabulary (data.vocab_size; 0: the task's default). tokens: the model's
  // vocabulary (model.vocab_size), which every token id must be below (0: taken from the data).
  std::int64_t vocab_size = 0;
  // recall, mqar: key-value pairs; copy and the seq2seq tasks: content tokens per sequence (0: a default)
  std::int64_t n_pairs = 0;
  std::int64_t n_distractors = 0;  // noisy_recall (0: fill the rest of the block); noisy_copy (0: n_pairs)
  std::uint64_t seed = 0;          // synthetic: seeds the fixed validation set
};

// One micro-batch: i32 [B, T] inputs and next-token targets; a target of -1 is ignored by the loss.
// Sequence-to-sequence data (Dataset::seq2seq) adds the encoder's input, and x, y are the decoder's:
// x = start, t_1 … t_n, then kSeq2SeqPad; y = t_1 … t_n, end, then -1 (framework/data/seq2seq_tokens.h).
struct Batch {
  Tensor x, y;
  Tensor source = Tensor();  // seq2seq: i32 [B, S], kSeq2SeqPad after each source's end; undefined otherwise
};

// Row `row` of i32 ids [B, W] (on any device) up to, not including, the first id `stop` accepts: a
// seq2seq source or decoder input without its padding, a target without its end.
std::vector<std::int32_t> row_ids_until(const Tensor& ids, std::int64_t row,
                                        const std::function<bool(std::int32_t)>& stop);
inline bool is_seq2seq_pad(std::int32_t id) { return id == kSeq2SeqPad; }

class Dataset {
 public:
  virtual ~Dataset() = default;

  virtual std::int64_t vocab_size() const = 0;
  // B training sequences of T tokens: random windows of the train split (text, tokens) or fresh
  // synthetic sequences, all drawn from gen, so the same generator state gives the same batch.
  virtual Batch sample_train(std::int64_t batch_size, std::int64_t block_size, Generator& gen) const = 0;
  // How many eval windows of T tokens exist, capped at max_windows (0: all; synthetic: a default).
  virtual std::int64_t eval_windows(std::int64_t block_size, std::int64_t max_windows) const = 0;
  // Eval windows [first_window, first_window + count) as a batch; deterministic, so eval batches can
  // be split across ranks or steps and always cover the same tokens.
  virtual Batch eval_batch(std::int64_t first_window, std::int64_t count, std::int64_t block_size) const = 0;
  // Synthetic tasks and pairs have one right answer per target: the trainer reports accuracy for them.
  virtual bool reports_accuracy() const { return false; }
  // Sequence-to-sequence data: batches carry a source for an encoder–decoder model, and the accuracy
  // reported is exact match (exact_match below), not per token.
  virtual bool seq2seq() const { return false; }
  // For byte-level text and pairs: the checkpoint's "vocab" metadata (docs/checkpoint-format.md), a JSON array of
  // the byte values with index = token id (null for the ids pairs reserve). "" for other kinds.
  virtual std::string vocab_json() const { return ""; }
  // For token shards made by `gattn tokenize`: the tokenizer found beside them (docs/tokenize.md); for
  // pairs, data.tokenizer. It goes into the run's checkpoints. nullptr for other data.
  virtual std::shared_ptr<const Tokenizer> tokenizer() const { return nullptr; }
  // What turns the data's token ids into text and back: the tokenizer, else the byte vocabulary of
  // text data; nullptr for bare token ids and synthetic tasks.
  std::shared_ptr<const TextCodec> text_codec() const;
  // One line for the terminal: kind, source, vocab and split sizes.
  virtual std::string describe() const = 0;

  // Fraction of the positions with target >= 0 whose argmax over logits [B, T, V] (a CPU tensor of
  // any floating dtype) equals the target; 0 when the batch has no targets.
  static double answer_accuracy(const Tensor& logits, const Batch& batch);
  // The rows with any target >= 0, and those whose argmax is right at every such target: for a
  // seq2seq batch, the targets greedy decoding would reproduce exactly (teacher forcing with every
  // prediction right is greedy decoding).
  struct ExactMatch {
    std::int64_t right = 0, rows = 0;
    double fraction() const { return rows == 0 ? 0.0 : static_cast<double>(right) / static_cast<double>(rows); }
  };
  static ExactMatch exact_match_counts(const Tensor& logits, const Batch& batch);
  // exact_match_counts as a fraction; 0 when no row has a target.
  static double exact_match(const Tensor& logits, const Batch& batch) {
    return exact_match_counts(logits, batch).fraction();
  }
};

// Builds the dataset that options.kind names and checks up front that windows of block_size tokens
// fit (DataError otherwise), so a run fails before its first step rather than at its first eval.
std::unique_ptr<Dataset> make_dataset(const DataOptions& options, std::int64_t block_size);

}  // namespace gattn
