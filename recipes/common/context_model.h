// Running a trained model at a context other than the one it trained at (`gattn eval --context`,
// `gattn report --context`): shorter always works; longer needs positions that go on past the block
// (model.position rope or none: no table to run out of), and memory for the windows.
#pragma once
#include <cstdint>
#include <string>

#include "recipes/common/checkpoint_model.h"

namespace gattn::recipes {

// The windows of `context` tokens are evaluated `rows` at a time: as many as keep the tokens of one
// batch near those of train.batch_size windows of the block, and at least one.
std::int64_t rows_at_context(std::int64_t batch_size, std::int64_t block_size, std::int64_t context);

// Makes ckpt.model run windows of `context` tokens, `rows` at a time. Beyond model.block_size a
// rope or none model is rebuilt with block_size = context and the same weights (ckpt.config keeps
// the trained block_size). UsageError (exit 2) naming `flag` ("eval --context") for a context ≤ 0,
// one beyond the learned position table, or windows whose forward would not fit this process's
// memory.
void fit_model_to_context(CheckpointModel& ckpt, std::int64_t context, std::int64_t rows, const std::string& flag);

}  // namespace gattn::recipes
