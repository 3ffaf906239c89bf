// Datasets behind `data.kind` (docs/config.md): char-level text, llm.c token shards and synthetic tasks,
// all drawing their randomness from a Generator so runs are reproducible and resumable.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "framework/data/errors.h"
#include "framework/tensor/random.h"
#include "framework/tensor/tensor.h"
#include "framework/text/subword_tokenizer.h"

namespace gattn {

// The `data.*` config section as plain values (the config layer fills it and validates names).
struct DataOptions {
  std::string kind;  // text | tokens | synthetic
  std::string path;  // text: a file; tokens: a glob pattern or a directory of .bin shards
  std::string task;  // synthetic: copy | assoc_recall | noisy_recall
  // synthetic: the task's vocabulary (data.vocab_size; 0: the task's default). tokens: the model's
  // vocabulary (model.vocab_size), which every token id must be below (0: taken from the data).
  std::int64_t vocab_size = 0;
  std::int64_t n_pairs = 0;        // recall: key-value pairs; copy: tokens to copy (0: a default)
  std::int64_t n_distractors = 0;  // noisy_recall (0: fill the rest of the block)
  std::uint64_t seed = 0;          // synthetic: seeds the fixed validation set
};

// One micro-batch: i32 [B, T] inputs and next-token targets; a target of -1 is ignored by the loss.
struct Batch {
  Tensor x, y;
};

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
  // Synthetic tasks have one right answer per target: the trainer reports answer accuracy for them.
  virtual bool reports_accuracy() const { return false; }
  // For byte-level text: the checkpoint's "vocab" metadata (docs/checkpoint-format.md), a JSON array of the byte
  // values with index = token id. "" for other kinds.
  virtual std::string vocab_json() const { return ""; }
  // For token shards made by `gattn tokenize`: the tokenizer found beside them (docs/tokenize.md),
  // which goes into the run's checkpoints. nullptr for other data.
  virtual std::shared_ptr<const SubwordTokenizer> tokenizer() const { return nullptr; }
  // What turns the data's token ids into text and back: the tokenizer, else the byte vocabulary of
  // text data; nullptr for bare token ids and synthetic tasks.
  std::shared_ptr<const TextCodec> text_codec() const;
  // One line for the terminal: kind, source, vocab and split sizes.
  virtual std::string describe() const = 0;

  // Fraction of the positions with target >= 0 whose argmax over logits [B, T, V] (a CPU tensor of
  // any floating dtype) equals the target; 0 when the batch has no targets.
  static double answer_accuracy(const Tensor& logits, const Batch& batch);
};

// Builds the dataset that options.kind names and checks up front that windows of block_size tokens
// fit (DataError otherwise), so a run fails before its first step rather than at its first eval.
std::unique_ptr<Dataset> make_dataset(const DataOptions& options, std::int64_t block_size);

}  // namespace gattn
