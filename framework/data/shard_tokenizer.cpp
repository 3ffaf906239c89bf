// find_shard_tokenizer: the tokenizer beside the shards checked against meta.json.
#include "framework/data/shard_tokenizer.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "framework/base/errors.h"
#include "framework/base/input_file.h"
#include "framework/text/hf_tokenizer.h"
#include "framework/text/subword_tokenizer.h"
#include "framework/text/tokenizer_directory.h"

namespace gattn {

namespace fs = std::filesystem;

std::shared_ptr<const Tokenizer> find_shard_tokenizer(const std::string& dir) {
  const bool hf = is_hf_tokenizer_directory(dir);
  const fs::path model = fs::path(dir) / (hf ? kHfTokenizerFile : kTokenizerModelFile),
                 meta_path = fs::path(dir) / "meta.json";
  std::error_code ec;
  std::string recorded;  // the sha256 meta.json records, if any
  if (fs::exists(meta_path, ec)) {
    const nlohmann::json meta = nlohmann::json::parse(
        read_input_file<DataError>(meta_path.string(), "the token shards' meta.json", 64u << 20), nullptr, false);
    if (!meta.is_object()) throw DataError("token shard meta.json " + meta_path.string() + " is not a JSON object");
    if (meta.contains("tokenizer_sha256")) {
      if (!meta["tokenizer_sha256"].is_string())
        throw DataError("token shard meta.json " + meta_path.string() + ": tokenizer_sha256 is not a string");
      recorded = meta["tokenizer_sha256"].get<std::string>();
    }
  }
  if (!fs::exists(model, ec)) {
    if (!recorded.empty())
      throw DataError("token shards in " + dir + " were made with tokenizer " + recorded.substr(0, 12) +
                      "… (meta.json), but " + model.string() + " is missing");
    return nullptr;
  }
  std::shared_ptr<const Tokenizer> tokenizer = load_tokenizer(hf ? dir : model.string());
  if (!recorded.empty() && recorded != tokenizer->sha256())
    throw DataError("token shards in " + dir + " were made with tokenizer " + recorded.substr(0, 12) +
                    "… (meta.json), but " + model.string() + " is " + tokenizer->sha256().substr(0, 12) +
                    "…: the shards and the tokenizer do not belong together");
  return tokenizer;
}

}  // namespace gattn
