// Importing a Hugging Face model directory as a gattn model (docs/import.md): the files read and
// checked (framework/io/hf_checkpoint.h), config.json and the tensors mapped (models/hf/), the run
// config a checkpoint carries, and the checkpoint directory written whole or not at all. `gattn
// import` is the command; the parity tests call these directly.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "framework/text/tokenizer.h"
#include "models/gpt.h"
#include "models/hf/hf_model.h"
#include "recipes/common/run_config.h"

namespace gattn::recipes {

// The metadata key of model.safetensors that says where an imported checkpoint came from: a JSON
// object {"from": "huggingface", "architecture", "model_type", "transformers_version"}.
inline constexpr const char* kImportKey = "import";

struct ImportedModel {
  std::string source;  // the Hugging Face directory
  models::HfModel hf;
  Config config;                       // the run config the checkpoint carries: defaults, and model.* from config.json
  std::unique_ptr<models::GPT> model;  // f32, holding the Hugging Face weights
  std::map<std::string, std::string> metadata;  // for model.safetensors: format, config, import, the tokenizer
  std::shared_ptr<const Tokenizer> tokenizer;   // the directory's, nullptr without one
};

// Reads `dir` and builds the gattn model it holds; `block_size_cap` > 0 caps the block size
// (max_position_embeddings otherwise). When `dir` holds a Hugging Face tokenizer (tokenizer.json)
// and `with_tokenizer`, the metadata carries it (checkpoint_text.h), so sample --prompt reads text:
// a tokenizer gattn does not read is refused as such (exit 2; import without it), one with more ids
// than the model's vocab_size is a CheckpointError. Throws ValueError (exit 2) for a config.json gattn refuses,
// CheckpointError (exit 3) for missing, damaged or inconsistent files (docs/import.md lists them).
ImportedModel import_hf(const std::string& dir, std::int64_t block_size_cap = 0, bool with_tokenizer = true);

// Writes `out` as a weights-only gattn checkpoint directory (model.safetensors; no optimizer state
// or state.json), staged and renamed into place, so `out` exists only once it is complete. An `out`
// that already exists is refused (OutputPathError, exit 2) before anything is written.
void write_imported_checkpoint(ImportedModel& imported, const std::string& out);

}  // namespace gattn::recipes
