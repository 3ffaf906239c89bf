// A text model's token ids mean bytes through the vocabulary saved with its weights (the checkpoint's
// "vocab"). Data read with another vocabulary (data.path naming another text, or data.kind changed)
// turns the same ids into other characters: a resumed run would retrain its embeddings on them and
// a loss measured on them means nothing. Resume and eval refuse such data.
#pragma once
#include <string>

#include "framework/data/dataset.h"

namespace gattn::recipes {

// Throws CheckpointError naming `model_path` when the checkpoint's vocabulary (`saved_vocab_json`,
// "" for token or synthetic data) and `data`'s differ, or only one of them has one.
void check_same_vocabulary(const std::string& saved_vocab_json, const std::string& model_path, const Dataset& data);

}  // namespace gattn::recipes
