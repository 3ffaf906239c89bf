// The tokenizer a set of token shards was made with. `gattn tokenize encode` writes tokenizer.model
// and meta.json (with the tokenizer's sha256) beside its shards; a run on them carries the tokenizer
// into its checkpoints so sampling and reports read and write text.
#pragma once
#include <memory>
#include <string>

#include "framework/text/tokenizer.h"

namespace gattn {

// Looks in `dir` (the shards' directory) for its tokenizer — a Hugging Face tokenizer.json, else
// gattn's tokenizer.model (framework/text/tokenizer_directory.h): nullptr when there is none and no
// meta.json that names one. DataError when meta.json names a tokenizer that is missing or whose
// sha256 differs from the tokenizer.model found (shards and tokenizer from different runs of
// `gattn tokenize`), or when either file is damaged.
std::shared_ptr<const Tokenizer> find_shard_tokenizer(const std::string& dir);

}  // namespace gattn
