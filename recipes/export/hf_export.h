// Exporting a gattn checkpoint as a Hugging Face model directory (docs/export.md): the checkpoint
// loaded as eval and sample load it, the class that computes its model, config.json and the tensors
// under transformers' names (models/hf/hf_export.h), and the directory written whole or not at all.
// `gattn export` is the command; the round-trip and golden tests call these directly.
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "models/gpt.h"
#include "models/hf/hf_export.h"

namespace gattn::recipes {

struct ExportedHfModel {
  std::string source;  // the checkpoint, for messages
  models::HfTarget target;
  std::vector<std::pair<std::string, Tensor>> tensors;  // model.safetensors, in the order written
  // Every other file of the directory, by name: config.json's text, and whatever a later step adds.
  std::map<std::string, std::string> files;
};

// `model` as the transformers class `wanted_class` ("" for the first that computes it). Throws
// ValueError (exit 2) for a model no class computes, naming the setting and listing what exports.
ExportedHfModel export_hf_model(models::GPT& model, const std::string& wanted_class = "");

// The checkpoint directory (or run directory: its latest checkpoint) `checkpoint`, exported; without
// `wanted_class`, a checkpoint `gattn import` wrote exports as the class it came from. Throws
// CheckpointError (exit 3) for a missing or damaged checkpoint, and what export_hf_model throws.
ExportedHfModel export_hf(const std::string& checkpoint, const std::string& wanted_class = "");

// Writes `out`: config.json, model.safetensors (F32, metadata {"format": "pt"} as transformers writes
// it) and the other files, into a staging directory renamed to `out` once complete. An `out` that
// exists, or lies inside the checkpoint, is refused (OutputPathError, exit 2) before anything is written.
void write_hf_directory(const ExportedHfModel& exported, const std::string& out);

}  // namespace gattn::recipes
