// Checkpoint directories (SPEC §2): checkpoints/step_<8 digits>/ holding model.safetensors and
// state.json, written into a temporary directory and renamed into place only when complete, then
// checkpoints/latest updated atomically. (Optimizer state and exact resume arrive with the resume
// issue; this writes what the training issue needs.)
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "framework/nn/module.h"

namespace gattn {

// "step_00000600"
std::string checkpoint_name(std::int64_t step);

// Writes run_dir/checkpoints/step_<step>/ (model.safetensors with `metadata`, state.json with
// `state`) and points run_dir/checkpoints/latest at it. A crash at any moment leaves the previous
// checkpoint and `latest` valid. Returns the checkpoint directory. Throws CheckpointError.
std::string write_checkpoint(const std::string& run_dir, std::int64_t step, nn::Module& model,
                             const std::map<std::string, std::string>& metadata, const nlohmann::json& state);

// Writes `text` to `path` through a temporary file, fsync and rename (never a half-written file).
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace gattn
