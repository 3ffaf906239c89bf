// How a checkpoint carries the text side of its vocabulary in its `__metadata__`
// (docs/checkpoint-format.md): "vocab" for char-level text (the byte values, index = token id), or,
// for token shards made by `gattn tokenize`, "tokenizer" (the SentencePiece model, base64) with
// "tokenizer_sha256" (the sha256 of the model's bytes, as `sha256sum tokenizer.model` prints it).
#pragma once
#include <map>
#include <memory>
#include <string>

#include "framework/text/subword_tokenizer.h"
#include "framework/text/text_codec.h"

namespace gattn {

inline constexpr const char* kTokenizerKey = "tokenizer";
inline constexpr const char* kTokenizerShaKey = "tokenizer_sha256";

void add_tokenizer_metadata(std::map<std::string, std::string>& metadata, const SubwordTokenizer& tokenizer);

// The checkpoint's tokenizer, nullptr when it has none. CheckpointError naming `where` when the
// entry is damaged: not base64, not a SentencePiece model, a sha256 that does not match, or one of
// the two keys without the other.
std::shared_ptr<const SubwordTokenizer> tokenizer_from_metadata(const std::map<std::string, std::string>& metadata,
                                                                const std::string& where);

// The tokenizer, else the byte vocabulary, else nullptr (a model of bare token ids).
std::shared_ptr<const TextCodec> text_codec_from_metadata(const std::map<std::string, std::string>& metadata,
                                                          const std::string& where);

}  // namespace gattn
