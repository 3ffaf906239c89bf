// Internal to framework/data: builds the batches of sequence-to-sequence data (Batch in dataset.h) row
// by row, so the synthetic tasks and text pairs lay out source, x and y the same way.
#pragma once
#include <cstdint>

#include "framework/data/dataset.h"

namespace gattn::data_detail {

// A batch of `rows` rows, all padding: source i32 [rows, source_width] of kSeq2SeqPad, and x, y
// i32 [rows, target_width + 1] (start or end added to a target) of kSeq2SeqPad and -1.
Batch empty_seq2seq_batch(std::int64_t rows, std::int64_t source_width, std::int64_t target_width);

// Fills row r: source = the source's tokens, then padding; x = start, the target, then padding;
// y = the target, end, then -1. The lengths must fit the widths the batch was made with.
void put_seq2seq_row(Batch& batch, std::int64_t r, const std::int32_t* source, std::int64_t source_length,
                     const std::int32_t* target, std::int64_t target_length);

}  // namespace gattn::data_detail
