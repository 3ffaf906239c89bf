// A text model's token ids mean bytes, or subword pieces, through the vocabulary saved with its
// weights (the checkpoint's "vocab", or its "tokenizer"). Data read with another vocabulary
// (data.path naming another text, shards made with another tokenizer, or data.kind changed) turns
// the same ids into other text: a resumed run would retrain its embeddings on them and a loss
// measured on them means nothing. Resume and eval refuse such data.
#pragma once
#include <map>
#include <string>

#include "framework/data/dataset.h"

namespace gattn::recipes {

// Throws CheckpointError naming `model_path` when the checkpoint's vocabulary (its `metadata`'s
// "vocab" and "tokenizer_sha256"; neither for bare token ids or synthetic data) and `data`'s
// differ, or only one of them has one.
void check_same_vocabulary(const std::map<std::string, std::string>& metadata, const std::string& model_path,
                           const Dataset& data);

}  // namespace gattn::recipes
