// The tokenizer entry of a checkpoint's metadata, written and read back with every check.
#include "framework/io/checkpoint_text.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "framework/base/errors.h"
#include "framework/io/byte_vocab.h"
#include "framework/io/errors.h"
#include "framework/text/digest.h"
#include "framework/text/hf_tokenizer.h"
#include "framework/text/subword_tokenizer.h"

namespace gattn {

void add_tokenizer_metadata(std::map<std::string, std::string>& metadata, const Tokenizer& tokenizer) {
  if (const auto* subword = dynamic_cast<const SubwordTokenizer*>(&tokenizer)) {
    metadata[kTokenizerKey] = base64_encode(subword->serialized());
  } else {
    nlohmann::json files = nlohmann::json::object();
    for (const auto& [name, bytes] : tokenizer.files()) files[name] = base64_encode(bytes);
    metadata[kHfTokenizerKey] = files.dump();
  }
  metadata[kTokenizerShaKey] = tokenizer.sha256();
}

namespace {

// The entry's files, checked for form; empty without a tokenizer. `hf` says which kind it is.
std::map<std::string, std::string> entry_files(const std::map<std::string, std::string>& metadata,
                                               const std::string& where, bool& hf) {
  const auto model = metadata.find(kTokenizerKey), files = metadata.find(kHfTokenizerKey),
             sha = metadata.find(kTokenizerShaKey);
  const bool has_model = model != metadata.end(), has_files = files != metadata.end();
  if (!has_model && !has_files && sha == metadata.end()) return {};
  if (has_model && has_files)
    throw CheckpointError(where + ": metadata has both \"tokenizer\" and \"hf_tokenizer\" (damaged header?)");
  const char* key = has_files ? kHfTokenizerKey : kTokenizerKey;
  if ((!has_model && !has_files) || sha == metadata.end())
    throw CheckpointError(where + ": metadata has \"" + (sha == metadata.end() ? key : kTokenizerShaKey) +
                          "\" without \"" + (sha == metadata.end() ? kTokenizerShaKey : kTokenizerKey) +
                          "\" (damaged header?)");
  hf = has_files;
  std::map<std::string, std::string> out;
  if (!hf) {
    const std::optional<std::string> bytes = base64_decode(model->second);
    if (!bytes) throw CheckpointError(where + ": metadata \"tokenizer\" is not base64 (damaged header?)");
    out[kTokenizerModelFile] = *bytes;
    return out;
  }
  const nlohmann::json j = nlohmann::json::parse(files->second, nullptr, false);
  if (!j.is_object())
    throw CheckpointError(where + ": metadata \"hf_tokenizer\" is not a JSON object (damaged header?)");
  for (const auto& [name, value] : j.items()) {
    const bool known = std::any_of(std::begin(kHfTokenizerFiles), std::end(kHfTokenizerFiles),
                                   [&](const char* n) { return name == n; });
    std::optional<std::string> bytes;
    if (value.is_string()) bytes = base64_decode(value.get<std::string>());
    if (!known || !bytes)
      throw CheckpointError(where + ": metadata \"hf_tokenizer\" has " +
                            (known ? "a file that is not base64, " + name : "an unknown file '" + name + "'") +
                            " (damaged header?)");
    out[name] = *bytes;
  }
  if (!out.count(kHfTokenizerFile))
    throw CheckpointError(where + ": metadata \"hf_tokenizer\" has no tokenizer.json (damaged header?)");
  return out;
}

}  // namespace

std::shared_ptr<const Tokenizer> tokenizer_from_metadata(const std::map<std::string, std::string>& metadata,
                                                         const std::string& where) {
  bool hf = false;
  std::map<std::string, std::string> files = entry_files(metadata, where, hf);
  if (files.empty()) return nullptr;
  std::shared_ptr<const Tokenizer> tokenizer;
  try {
    if (hf)
      tokenizer = std::make_shared<const HfTokenizer>(std::move(files), "its metadata \"hf_tokenizer\"");
    else
      tokenizer = std::make_shared<const SubwordTokenizer>(files[kTokenizerModelFile], "its metadata \"tokenizer\"");
  } catch (const Error& e) {  // a DataError, or a ValueError for a file this build does not read
    throw CheckpointError(where + ": " + e.what());
  }
  const std::string& sha = metadata.at(kTokenizerShaKey);
  if (tokenizer->sha256() != sha)
    throw CheckpointError(where + ": metadata \"" + (hf ? kHfTokenizerKey : kTokenizerKey) + "\" has sha256 " +
                          tokenizer->sha256().substr(0, 12) + "…, not the recorded " + sha.substr(0, 12) +
                          "… (damaged header?)");
  return tokenizer;
}

std::map<std::string, std::string> tokenizer_files(const std::map<std::string, std::string>& metadata,
                                                   const std::string& where) {
  const std::shared_ptr<const Tokenizer> tokenizer = tokenizer_from_metadata(metadata, where);
  return tokenizer ? tokenizer->files() : std::map<std::string, std::string>{};
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
