// The token layout of sequence-to-sequence batches (framework/data/seq2seq_tokens.h, docs/seq2seq.md).
#include "framework/data/seq2seq_batch.h"

#include <algorithm>
#include <string>

namespace gattn::data_detail {

Batch empty_seq2seq_batch(std::int64_t rows, std::int64_t source_width, std::int64_t target_width) {
  Batch b{Tensor::empty({rows, target_width + 1}, DType::i32), Tensor::empty({rows, target_width + 1}, DType::i32),
          Tensor::empty({rows, source_width}, DType::i32)};
  std::fill_n(b.x.data<std::int32_t>(), b.x.numel(), kSeq2SeqPad);
  std::fill_n(b.y.data<std::int32_t>(), b.y.numel(), -1);  // ignored by the loss
  std::fill_n(b.source.data<std::int32_t>(), b.source.numel(), kSeq2SeqPad);
  return b;
}

void put_seq2seq_row(Batch& batch, std::int64_t r, const std::int32_t* source, std::int64_t source_length,
                     const std::int32_t* target, std::int64_t target_length) {
  const std::int64_t source_width = batch.source.size(1), width = batch.x.size(1);
  if (r < 0 || r >= batch.x.size(0) || source_length > source_width || target_length + 1 > width)
    throw ValueError("put_seq2seq_row: row " + std::to_string(r) + " with a source of " +
                     std::to_string(source_length) + " and a target of " + std::to_string(target_length) +
                     " tokens does not fit the batch");
  std::copy_n(source, source_length, batch.source.data<std::int32_t>() + r * source_width);
  std::int32_t* x = batch.x.data<std::int32_t>() + r * width;
  std::int32_t* y = batch.y.data<std::int32_t>() + r * width;
  // Teacher forcing: the decoder reads start, t_1 … t_n and predicts t_1 … t_n, end.
  x[0] = kSeq2SeqStart;
  std::copy_n(target, target_length, x + 1);
  std::copy_n(target, target_length, y);
  y[target_length] = kSeq2SeqEnd;
}

}  // namespace gattn::data_detail
