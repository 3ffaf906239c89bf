// The tokenizer entry of a checkpoint's metadata, written and read back with every check.
#include "framework/io/checkpoint_text.h"

#include "framework/base/errors.h"
#include "framework/io/byte_vocab.h"
#include "framework/io/errors.h"
#include "framework/text/digest.h"

namespace gattn {

void add_tokenizer_metadata(std::map<std::string, std::string>& metadata, const SubwordTokenizer& tokenizer) {
  metadata[kTokenizerKey] = base64_encode(tokenizer.serialized());
  metadata[kTokenizerShaKey] = tokenizer.sha256();
}

std::shared_ptr<const SubwordTokenizer> tokenizer_from_metadata(const std::map<std::string, std::string>& metadata,
                                                                const std::string& where) {
  const auto model = metadata.find(kTokenizerKey), sha = metadata.find(kTokenizerShaKey);
  if (model == metadata.end() && sha == metadata.end()) return nullptr;
  if (model == metadata.end() || sha == metadata.end())
    throw CheckpointError(where + ": metadata has \"" + (model == metadata.end() ? kTokenizerShaKey : kTokenizerKey) +
                          "\" without \"" + (model == metadata.end() ? kTokenizerKey : kTokenizerShaKey) +
                          "\" (damaged header?)");
  const std::optional<std::string> bytes = base64_decode(model->second);
  if (!bytes) throw CheckpointError(where + ": metadata \"tokenizer\" is not base64 (damaged header?)");
  std::shared_ptr<const SubwordTokenizer> tokenizer;
  try {
    tokenizer = std::make_shared<const SubwordTokenizer>(*bytes, "its metadata \"tokenizer\"");
  } catch (const DataError& e) {
    throw CheckpointError(where + ": " + e.what());
  }
  if (tokenizer->sha256() != sha->second)
    throw CheckpointError(where + ": metadata \"tokenizer\" has sha256 " + tokenizer->sha256().substr(0, 12) +
                          "…, not the recorded " + sha->second.substr(0, 12) + "… (damaged header?)");
  return tokenizer;
}

std::shared_ptr<const TextCodec> text_codec_from_metadata(const std::map<std::string, std::string>& metadata,
                                                          const std::string& where) {
  if (auto tokenizer = tokenizer_from_metadata(metadata, where)) return tokenizer;
  const auto vocab = metadata.find("vocab");
  if (vocab == metadata.end()) return nullptr;
  std::optional<ByteVocab> bytes = ByteVocab::from_json(vocab->second);
  return bytes ? std::make_shared<const ByteVocab>(std::move(*bytes)) : nullptr;
}

}  // namespace gattn
