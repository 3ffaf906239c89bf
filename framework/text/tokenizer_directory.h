// Where gattn takes a tokenizer (`tokenize encode --tokenizer`, `data.tokenizer`, the tokenizer
// beside token shards): a directory or a file, of either kind. A Hugging Face directory holds a
// tokenizer.json that is a Hugging Face tokenizer (is_hf_tokenizer_json); gattn's directories
// (`gattn tokenize train`) hold tokenizer.model and a tokenizer.json of another content (how the
// tokenizer was trained), and are read as they always were.
#pragma once
#include <memory>
#include <string>

#include "framework/text/tokenizer.h"

namespace gattn {

// Whether directory `dir` holds a Hugging Face tokenizer.json.
bool is_hf_tokenizer_directory(const std::string& dir);

// `path`: a Hugging Face directory, or its tokenizer.json; a gattn tokenizer directory, or a
// tokenizer.model file. DataError naming the path when it is none of them (what is missing), and
// the errors of the tokenizer's own loading (HfTokenizer, SubwordTokenizer).
std::shared_ptr<const Tokenizer> load_tokenizer(const std::string& path);

}  // namespace gattn
