// make_dataset, the window sampling shared by text and token shards, answer accuracy and exact match.
#include "framework/data/dataset.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "framework/data/windowed_dataset.h"
#include "framework/io/byte_vocab.h"

namespace gattn {
namespace data_detail {

std::int64_t random_index(Generator& gen, std::int64_t n) {
  if (n <= 0) throw ValueError("random_index: range must be positive, got " + std::to_string(n));
  if (n <= std::numeric_limits<std::int32_t>::max()) {
    Tensor one = Tensor::empty({1}, DType::i32);
    gen.randint_(one, n);
    return one.data<std::int32_t>()[0];
  }
  Tensor draw = Tensor::empty({2}, DType::i32);
  // 60 random bits folded into [0, n): the modulo bias is below n / 2^60, far under sampling noise.
  gen.randint_(draw, std::int64_t{1} << 30);
  const std::int32_t* d = draw.data<std::int32_t>();
  std::uint64_t r = (static_cast<std::uint64_t>(d[0]) << 30) | static_cast<std::uint64_t>(d[1]);
  return static_cast<std::int64_t>(r % static_cast<std::uint64_t>(n));
}

namespace {

void check_batch_args(const char* what, std::int64_t batch_size, std::int64_t block_size) {
  if (batch_size <= 0 || block_size <= 0) {
    std::string msg(what);
    msg.append(": batch size and block size must be positive, got ");
    msg.append(std::to_string(batch_size)).append(" and ").append(std::to_string(block_size));
    throw ValueError(msg);
  }
}

// Copies windows of T+1 tokens starting at starts[b] into x (the first T) and y (the last T).
Batch gather_windows(const TokenSource& tokens, const std::vector<std::int64_t>& starts, std::int64_t block_size) {
  const auto rows = static_cast<std::int64_t>(starts.size());
  Batch b{Tensor::empty({rows, block_size}, DType::i32), Tensor::empty({rows, block_size}, DType::i32)};
  std::int32_t* x = b.x.data<std::int32_t>();
  std::int32_t* y = b.y.data<std::int32_t>();
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t start = starts[static_cast<std::size_t>(r)];
    std::int32_t* xr = x + r * block_size;
    std::int32_t* yr = y + r * block_size;
    tokens.copy(start, block_size, xr);
    // y is x shifted by one: only its last token is new.
    std::copy(xr + 1, xr + block_size, yr);
    tokens.copy(start + block_size, 1, yr + block_size - 1);
  }
  return b;
}

}  // namespace

void WindowedDataset::check_fits(std::int64_t block_size) const {
  auto fail = [&](const char* split, std::int64_t n) {
    std::string msg = "block_size ";
    msg.append(std::to_string(block_size)).append(" is larger than the ").append(split);
    msg.append(" split (").append(std::to_string(n)).append(" tokens) of ").append(source_);
    msg.append(": a window needs block_size + 1 tokens");
    throw DataError(msg);
  };
  if (block_size <= 0) throw DataError("block_size must be positive, got " + std::to_string(block_size));
  if (train_->size() < block_size + 1) fail("training", train_->size());
  if (val_->size() < block_size + 1) fail("validation", val_->size());
}

Batch WindowedDataset::sample_train(std::int64_t batch_size, std::int64_t block_size, Generator& gen) const {
  check_batch_args("sample_train", batch_size, block_size);
  check_fits(block_size);
  // Starts in [0, n_train - T - 1], so the target window [s+1, s+T] stays inside the split.
  const std::int64_t n_starts = train_->size() - block_size;
  std::vector<std::int64_t> starts(static_cast<std::size_t>(batch_size));
  for (auto& s : starts) s = random_index(gen, n_starts);
  return gather_windows(*train_, starts, block_size);
}

std::int64_t WindowedDataset::eval_windows(std::int64_t block_size, std::int64_t max_windows) const {
  if (block_size <= 0) throw ValueError("eval_windows: block size must be positive, got " + std::to_string(block_size));
  // Window w covers [wT, wT + T] and fits when wT + T + 1 <= n_val.
  const std::int64_t n_val = val_->size();
  std::int64_t n = n_val >= 1 ? (n_val - 1) / block_size : 0;
  return max_windows > 0 ? std::min(n, max_windows) : n;
}

Batch WindowedDataset::eval_batch(std::int64_t first_window, std::int64_t count, std::int64_t block_size) const {
  check_batch_args("eval_batch", count, block_size);
  const std::int64_t total = eval_windows(block_size, 0);
  if (first_window < 0 || first_window + count > total) {
    std::string msg = "eval_batch: windows [";
    msg.append(std::to_string(first_window)).append(", ").append(std::to_string(first_window + count));
    msg.append(") out of range; ").append(source_).append(" has ").append(std::to_string(total));
    msg.append(" eval windows of block_size ").append(std::to_string(block_size));
    throw ValueError(msg);
  }
  std::vector<std::int64_t> starts(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) starts[static_cast<std::size_t>(i)] = (first_window + i) * block_size;
  return gather_windows(*val_, starts, block_size);
}

}  // namespace data_detail

std::shared_ptr<const TextCodec> Dataset::text_codec() const {
  if (auto t = tokenizer()) return t;
  std::optional<ByteVocab> vocab = ByteVocab::from_json(vocab_json());
  return vocab ? std::make_shared<const ByteVocab>(std::move(*vocab)) : nullptr;
}

double Dataset::answer_accuracy(const Tensor& logits, const Batch& batch) {
  if (logits.dim() != 3 || batch.y.dim() != 2 || logits.size(0) != batch.y.size(0) || logits.size(1) != batch.y.size(1))
    throw ShapeError("answer_accuracy: logits " + shape_str(logits.shape()) + " do not match targets " +
                     shape_str(batch.y.shape()));
  const Tensor l = logits.to(DType::f32);
  const float* lp = l.data<float>();
  const std::int32_t* y = batch.y.data<std::int32_t>();
  const std::int64_t rows = batch.y.numel(), vocab = logits.size(2);
  std::int64_t answered = 0, right = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    if (y[r] < 0) continue;
    const float* row = lp + r * vocab;
    // Ties go to the lowest id, like torch.argmax.
    std::int64_t best = std::max_element(row, row + vocab) - row;
    ++answered;
    right += best == y[r];
  }
  return answered == 0 ? 0.0 : static_cast<double>(right) / static_cast<double>(answered);
}

std::vector<std::int32_t> row_ids_until(const Tensor& ids, std::int64_t row,
                                        const std::function<bool(std::int32_t)>& stop) {
  if (!ids.defined() || ids.dtype() != DType::i32 || ids.dim() != 2 || row < 0 || row >= ids.size(0))
    throw ShapeError("row_ids_until: expected row " + std::to_string(row) + " of i32 ids [B, W], got " +
                     (ids.defined() ? ids.str() : std::string("undefined")));
  const Tensor host = ids.to(Device::cpu);
  const std::int64_t W = host.size(1);
  const std::int32_t* r = host.data<std::int32_t>() + row * W;
  std::vector<std::int32_t> out;
  for (std::int64_t j = 0; j < W && !stop(r[j]); ++j) out.push_back(r[j]);
  return out;
}

Dataset::ExactMatch Dataset::exact_match_counts(const Tensor& logits, const Batch& batch) {
  if (logits.dim() != 3 || batch.y.dim() != 2 || logits.size(0) != batch.y.size(0) || logits.size(1) != batch.y.size(1))
    throw ShapeError("exact_match: logits " + shape_str(logits.shape()) + " do not match targets " +
                     shape_str(batch.y.shape()));
  const Tensor l = logits.to(DType::f32);
  const float* lp = l.data<float>();
  const std::int32_t* y = batch.y.data<std::int32_t>();
  const std::int64_t rows = batch.y.size(0), width = batch.y.size(1), vocab = logits.size(2);
  ExactMatch out;
  for (std::int64_t r = 0; r < rows; ++r) {
    bool any = false, all_right = true;
    for (std::int64_t t = 0; t < width && all_right; ++t) {
      const std::int32_t target = y[r * width + t];
      if (target < 0) continue;
      any = true;
      const float* row = lp + (r * width + t) * vocab;
      // Ties go to the lowest id, as in answer_accuracy.
      all_right = std::max_element(row, row + vocab) - row == target;
    }
    // The scan stops at a row's first wrong token; `any` is set by then, so the row still counts.
    if (!any) continue;
    ++out.rows;
    out.right += all_right;
  }
  return out;
}

std::unique_ptr<Dataset> make_dataset(const DataOptions& options, std::int64_t block_size) {
  // Only pairs read text through a tokenizer of the config's choosing (token shards bring their own).
  if (!options.tokenizer.empty() && options.kind != "pairs")
    throw ValueError("data.tokenizer is set ('" + options.tokenizer + "') but only data.kind pairs uses it, not '" +
                     options.kind + "'");
  if (options.kind == "text") return data_detail::make_text_dataset(options, block_size);
  if (options.kind == "tokens") return data_detail::make_token_dataset(options, block_size);
  if (options.kind == "synthetic") return data_detail::make_synthetic_dataset(options, block_size);
  if (options.kind == "pairs") return data_detail::make_pair_dataset(options, block_size);
  throw DataError("data.kind must be text, tokens, synthetic or pairs, got '" + options.kind + "'");
}

}  // namespace gattn
