// Rebuilding a trained model from a checkpoint for the read-only recipes (eval, sample): the
// resolved config from the weights' metadata (plus overrides), the model with its weights, and the
// text vocabulary when the run had one.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "framework/text/text_codec.h"
#include "models/gpt.h"
#include "recipes/common/run_config.h"

namespace gattn::recipes {

struct CheckpointModel {
  std::string model_path;  // …/model.safetensors
  Config config;           // the run's resolved config with the overrides applied
  std::unique_ptr<models::GPT> model;
  // The weights file's metadata (docs/checkpoint-format.md): "vocab" or "tokenizer" among others.
  std::map<std::string, std::string> metadata;
  // Text in and out: the tokenizer, else the byte vocabulary; nullptr for bare token ids.
  std::shared_ptr<const TextCodec> codec;
};

// The optimizer steps a checkpoint directory's weights have seen: state.json's step, else the step
// in the directory's name (step_00000040), else 0. It fixes the scheduled gate options (temperature,
// ramp) for eval and generation; a damaged state.json throws CheckpointError.
std::int64_t checkpoint_step(const std::filesystem::path& dir);

// `dir` as a checkpoint directory: itself when it holds model.safetensors, else the one a run
// directory's checkpoints/latest names (a damaged or dangling `latest` is refused). CheckpointError
// (exit 3) prefixed by `who` when it is neither.
std::filesystem::path checkpoint_directory(const std::string& dir, const std::string& who);

// `dir` is a checkpoint directory (holding model.safetensors) or a run directory, whose
// checkpoints/latest is used. Sets the CPU thread count from train.threads. Throws CheckpointError
// (exit 3) for a missing or unreadable checkpoint, ConfigError (exit 2) for a bad override.
CheckpointModel load_checkpoint_model(const std::string& dir, const std::vector<std::string>& overrides,
                                      const std::string& who);

}  // namespace gattn::recipes
