// The vocabulary check of resume and eval.
#include "recipes/common/vocabulary_match.h"

#include <nlohmann/json.hpp>

#include "framework/io/checkpoint_text.h"
#include "framework/io/errors.h"

namespace gattn::recipes {

namespace {

std::string value_of(const std::map<std::string, std::string>& metadata, const std::string& key) {
  const auto it = metadata.find(key);
  return it == metadata.end() ? "" : it->second;
}

void check_same_tokenizer(const std::string& saved_sha, const std::string& where, const Dataset& data) {
  const std::shared_ptr<const Tokenizer> now = data.tokenizer();
  if (saved_sha.empty() && !now) return;
  if (saved_sha.empty())
    throw CheckpointError(where + "its model was trained on token ids without a tokenizer; the data (" +
                          data.describe() + ") comes with tokenizer " + now->sha256().substr(0, 12) + "…");
  if (!now)
    throw CheckpointError(where + "its model reads text through tokenizer " + saved_sha.substr(0, 12) +
                          "…; the data (" + data.describe() + ") has no tokenizer beside its shards");
  if (now->sha256() != saved_sha)
    throw CheckpointError(where + "its model was trained with tokenizer " + saved_sha.substr(0, 12) +
                          "…, but the data's tokenizer is " + now->sha256().substr(0, 12) +
                          "… (shards made with another tokenizer?)");
}

}  // namespace

void check_same_vocabulary(const std::map<std::string, std::string>& metadata, const std::string& model_path,
                           const Dataset& data) {
  const std::string where = "checkpoint file '" + model_path + "': ";
  check_same_tokenizer(value_of(metadata, kTokenizerShaKey), where, data);
  const std::string saved_vocab_json = value_of(metadata, "vocab");
  const std::string now_json = data.vocab_json();
  if (saved_vocab_json.empty() && now_json.empty()) return;  // token ids (or a tokenizer) on both sides
  if (saved_vocab_json.empty())
    throw CheckpointError(where + "its model was trained on token ids without a text vocabulary; the data (" +
                          data.describe() + ") is text");
  if (now_json.empty())
    throw CheckpointError(where + "its model reads text through its saved vocabulary; the data (" + data.describe() +
                          ") has none");
  const nlohmann::json saved = nlohmann::json::parse(saved_vocab_json, nullptr, false);
  const nlohmann::json now = nlohmann::json::parse(now_json, nullptr, false);
  if (saved.is_discarded() || saved != now)
    throw CheckpointError(where + "its vocabulary differs from the data's (data.path names another text?)");
}

}  // namespace gattn::recipes
