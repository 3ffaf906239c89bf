// The vocabulary check of resume and eval.
#include "recipes/common/vocabulary_match.h"

#include <nlohmann/json.hpp>

#include "framework/io/errors.h"

namespace gattn::recipes {

void check_same_vocabulary(const std::string& saved_vocab_json, const std::string& model_path, const Dataset& data) {
  const std::string where = "checkpoint file '" + model_path + "': ";
  const std::string now_json = data.vocab_json();
  if (saved_vocab_json.empty() && now_json.empty()) return;  // token ids on both sides
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
