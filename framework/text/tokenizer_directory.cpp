// load_tokenizer: which kind a directory or file is.
#include "framework/text/tokenizer_directory.h"

#include <filesystem>

#include "framework/base/errors.h"
#include "framework/base/input_file.h"
#include "framework/text/hf_tokenizer.h"
#include "framework/text/subword_tokenizer.h"

namespace gattn {

namespace fs = std::filesystem;

namespace {

// tokenizer.json is read whole to be told apart; a Hugging Face one is megabytes.
constexpr std::uint64_t kMaxTokenizerJson = 1u << 30;

bool hf_file(const fs::path& file) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return false;
  return is_hf_tokenizer_json(read_input_file<DataError>(file.string(), "the tokenizer", kMaxTokenizerJson));
}

}  // namespace

bool is_hf_tokenizer_directory(const std::string& dir) { return hf_file(fs::path(dir) / kHfTokenizerFile); }

std::shared_ptr<const Tokenizer> load_tokenizer(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    if (is_hf_tokenizer_directory(path)) return HfTokenizer::load(path);
    if (!fs::exists(fs::path(path) / kTokenizerModelFile, ec))
      throw DataError("tokenizer directory " + path + " has neither a Hugging Face " + kHfTokenizerFile + " nor a " +
                      kTokenizerModelFile + " (from gattn tokenize train)");
    return SubwordTokenizer::load(path);
  }
  if (fs::path(path).filename() == kHfTokenizerFile && hf_file(path)) {
    const fs::path dir = fs::path(path).parent_path();
    return HfTokenizer::load(dir.empty() ? "." : dir.string());
  }
  return SubwordTokenizer::load(path);
}

}  // namespace gattn
