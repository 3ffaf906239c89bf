// How a checkpoint carries the text side of its vocabulary in its `__metadata__`
// (docs/checkpoint-format.md): "vocab" for char-level text (the byte values, index = token id), or a
// tokenizer with "tokenizer_sha256" (its identity, Tokenizer::sha256): for token shards made by
// `gattn tokenize` with gattn's own tokenizer, "tokenizer" (the SentencePiece model, base64); for a
// Hugging Face tokenizer (imported models, shards made with one), "hf_tokenizer" (a JSON object:
// file name → the file's bytes in base64: tokenizer.json, and tokenizer_config.json,
// special_tokens_map.json, tokenizer.model when the directory had them), so the files can be
// written back byte for byte.
#pragma once
#include <map>
#include <memory>
#include <string>

#include "framework/text/text_codec.h"
#include "framework/text/tokenizer.h"

namespace gattn {

inline constexpr const char* kTokenizerKey = "tokenizer";
inline constexpr const char* kHfTokenizerKey = "hf_tokenizer";
inline constexpr const char* kTokenizerShaKey = "tokenizer_sha256";

void add_tokenizer_metadata(std::map<std::string, std::string>& metadata, const Tokenizer& tokenizer);

// The checkpoint's tokenizer, nullptr when it has none. CheckpointError naming `where` when the
// entry is damaged: not base64 (or, for "hf_tokenizer", not a JSON object of base64 strings), not a
// tokenizer, a sha256 that does not match, "tokenizer_sha256" without a tokenizer or the other way
// round, or both "tokenizer" and "hf_tokenizer".
std::shared_ptr<const Tokenizer> tokenizer_from_metadata(const std::map<std::string, std::string>& metadata,
                                                         const std::string& where);

// The files of the checkpoint's tokenizer, by name, byte for byte as they were read: a Hugging Face
// tokenizer's (tokenizer.json, …), or {"tokenizer.model": …} for gattn's SentencePiece tokenizers;
// empty without a tokenizer. What a Hugging Face export writes beside the weights. The entry is
// verified as tokenizer_from_metadata does (CheckpointError naming `where`).
std::map<std::string, std::string> tokenizer_files(const std::map<std::string, std::string>& metadata,
                                                   const std::string& where);

// The tokenizer, else the byte vocabulary, else nullptr (a model of bare token ids).
std::shared_ptr<const TextCodec> text_codec_from_metadata(const std::map<std::string, std::string>& metadata,
                                                          const std::string& where);

}  // namespace gattn
