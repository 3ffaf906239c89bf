// A SentencePiece model (tokenizer.model, a protobuf ModelProto) with its normalizer replaced, so
// that SentencePiece applies the pieces and merges of a Llama 2 style model while the text around
// them is prepared as the model's tokenizer.json says (HfTokenizer): no Unicode normalization, no
// dummy "▁" prefix (HfTokenizer adds it where tokenizer.json's normalizer does), whitespace kept and
// written as "▁". Debian's SentencePiece ships no protobuf headers, so the few bytes are rewritten
// here in the wire format.
#pragma once
#include <string>

namespace gattn {

// `model` with normalizer_spec {name "identity", add_dummy_prefix false, remove_extra_whitespaces
// false, escape_whitespaces true} and without its self-test samples and denormalizer, which the new
// normalizer could fail. DataError naming `where` when the bytes are not a protobuf message.
std::string sentencepiece_with_plain_normalizer(const std::string& model, const std::string& where);

}  // namespace gattn
