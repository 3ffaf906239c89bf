// SubwordTokenizer over SentencePiece's processor.
#include "framework/text/subword_tokenizer.h"

#include <sentencepiece_processor.h>

#include <cstdio>
#include <filesystem>

#include "framework/base/errors.h"
#include "framework/base/input_file.h"
#include "framework/text/digest.h"

namespace gattn {

namespace {

// "<0xAB>", SentencePiece's byte-fallback piece, to its byte.
char byte_of_piece(const std::string& piece) { return static_cast<char>(std::stoi(piece.substr(3, 2), nullptr, 16)); }

// SentencePiece replaces each byte that is not valid UTF-8 by U+FFFD (three byte pieces), which
// would silently break the round trip; such text is refused instead, naming the byte.
void check_utf8(std::string_view text) { require_utf8(text, "the subword tokenizer"); }

}  // namespace

SubwordTokenizer::SubwordTokenizer(std::string serialized_model, const std::string& source)
    : serialized_(std::move(serialized_model)),
      sha256_(sha256_hex(serialized_)),
      files_{{kTokenizerModelFile, serialized_}},
      processor_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {
  const auto status = processor_->LoadFromSerializedProto(serialized_);
  if (!status.ok())
    throw DataError(source + " is not a SentencePiece tokenizer model (" + std::string(status.message()) + ")");
}

SubwordTokenizer::~SubwordTokenizer() = default;

std::shared_ptr<const SubwordTokenizer> SubwordTokenizer::load(const std::string& path) {
  std::filesystem::path file(path);
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) file /= kTokenizerModelFile;
  const std::string bytes = read_input_file<DataError>(file.string(), "the tokenizer model");
  return std::make_shared<const SubwordTokenizer>(bytes, "tokenizer file " + file.string());
}

std::int64_t SubwordTokenizer::size() const { return processor_->GetPieceSize(); }

std::vector<std::int32_t> SubwordTokenizer::encode(const std::string& text) const {
  check_utf8(text);
  std::vector<int> ids;
  const auto status = processor_->Encode(text, &ids);
  if (!status.ok()) throw ValueError("the tokenizer cannot encode the text: " + std::string(status.message()));
  return {ids.begin(), ids.end()};
}

std::vector<std::int32_t> SubwordTokenizer::encode_lines(const std::string& text) const {
  check_utf8(text);
  std::vector<std::int32_t> out;
  std::vector<int> ids;
  const std::string_view all(text);
  for (std::size_t at = 0; at < all.size();) {
    std::size_t end = all.find('\n', at);
    end = end == std::string_view::npos ? all.size() : end + 1;
    const auto status = processor_->Encode(all.substr(at, end - at), &ids);
    if (!status.ok()) throw ValueError("the tokenizer cannot encode the text: " + std::string(status.message()));
    out.insert(out.end(), ids.begin(), ids.end());
    at = end;
  }
  return out;
}

std::string SubwordTokenizer::decode(const std::vector<std::int32_t>& ids) const {
  std::vector<int> in;
  in.reserve(ids.size());
  for (std::int32_t id : ids)
    if (id >= 0 && id < size()) in.push_back(id);  // as ByteVocab: ids outside the vocabulary are dropped
  std::string out;
  const auto status = processor_->Decode(in, &out);
  if (!status.ok()) throw ValueError("the tokenizer cannot decode the ids: " + std::string(status.message()));
  return out;
}

std::string SubwordTokenizer::token_bytes(std::int32_t id) const {
  if (id < 0 || id >= size()) return "";
  if (processor_->IsByte(id)) return std::string(1, byte_of_piece(processor_->IdToPiece(id)));
  if (processor_->IsControl(id) || processor_->IsUnused(id)) return "";
  if (processor_->IsUnknown(id)) return decode({id});
  // A normal piece: its text with SentencePiece's whitespace mark "▁" (U+2581) back as a space.
  const std::string& piece = processor_->IdToPiece(id);
  static const std::string kSpaceMark = "\xE2\x96\x81";
  std::string out;
  for (std::size_t i = 0; i < piece.size();) {
    if (piece.compare(i, kSpaceMark.size(), kSpaceMark) == 0) {
      out += ' ';
      i += kSpaceMark.size();
    } else {
      out += piece[i++];
    }
  }
  return out;
}

std::int32_t SubwordTokenizer::start_token() const {
  const std::vector<std::int32_t> newline = encode("\n");
  return newline.empty() ? 0 : newline.front();
}

std::string SubwordTokenizer::piece(std::int32_t id) const {
  return id >= 0 && id < size() ? processor_->IdToPiece(id) : std::string();
}

std::int32_t SubwordTokenizer::end_of_document() const { return processor_->eos_id(); }

}  // namespace gattn
