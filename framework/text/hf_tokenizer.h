// A Hugging Face tokenizer: the tokenizer.json of a model repository (GPT-2, Llama 3, Qwen2/2.5/3,
// Llama 2 / TinyLlama / Mistral), encoding to the ids `tokenizers` gives (docs/tokenize.md).
//
// Two families are read. Byte-level BPE (GPT-2, Llama 3, Qwen): an optional NFC normalizer, the
// pre-tokenizer (hf_pre_tokenizer.h), the byte-level alphabet (byte_level.h) and BPE merges by rank
// (bpe_model.h, with ignore_merges). SentencePiece BPE with byte fallback (Llama 2's family): the
// directory's tokenizer.model applied by SentencePiece (the library SubwordTokenizer uses), with the
// "▁" prefix and whitespace of tokenizer.json's Prepend/Replace normalizer. Both cut the added tokens
// out first (hf_added_tokens.h) and frame a prompt with the post-processor's template.
//
// encode() is `tokenizers`' encode(text, add_special_tokens=False): the text's own tokens (added
// tokens written in it included), no <|begin_of_text|>; encode_prompt() is add_special_tokens=True.
// Text must be valid UTF-8 (ValueError naming the byte, as SubwordTokenizer): `tokenizers` takes a
// Python str, which cannot hold other bytes, so no reference says what they would become.
#pragma once
#include <array>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "framework/text/bpe_model.h"
#include "framework/text/hf_added_tokens.h"
#include "framework/text/hf_pre_tokenizer.h"
#include "framework/text/tokenizer.h"

namespace gattn {

class SubwordTokenizer;

inline constexpr const char* kHfTokenizerFile = "tokenizer.json";
inline constexpr const char* kHfTokenizerConfigFile = "tokenizer_config.json";
inline constexpr const char* kHfSpecialTokensFile = "special_tokens_map.json";
// The files of a Hugging Face tokenizer directory gattn reads and carries, tokenizer.json first.
inline constexpr const char* kHfTokenizerFiles[] = {"tokenizer.json", "tokenizer_config.json",
                                                    "special_tokens_map.json", "tokenizer.model"};

// Whether `bytes` (a file named tokenizer.json) is a Hugging Face tokenizer: a JSON object whose
// "model" is an object with a "type". gattn's own tokenizer directories hold a tokenizer.json too
// (how the tokenizer was trained), which is not.
bool is_hf_tokenizer_json(const std::string& bytes);

// The identity of a Hugging Face tokenizer: the SHA-256 of tokenizer.json's bytes followed by
// tokenizer.model's when there is one (the files that decide the ids); for tokenizer.json alone,
// what `sha256sum tokenizer.json` prints.
std::string hf_tokenizer_sha256(const std::map<std::string, std::string>& files);

class HfTokenizer : public Tokenizer {
 public:
  // `files` by name (kHfTokenizerFiles; tokenizer.json required). `source` names the directory in
  // messages. ValueError (exit 2) for what gattn does not implement — a model other than BPE
  // (WordPiece, Unigram, WordLevel), a normalizer, pre-tokenizer, post-processor or decoder other
  // than those above, BPE dropout — named; DataError (exit 3) for a damaged file: not JSON, a field
  // of the wrong type, merges naming tokens the vocabulary lacks, a byte-level vocabulary without
  // all 256 bytes, a tokenizer.model whose pieces are not tokenizer.json's vocabulary.
  HfTokenizer(std::map<std::string, std::string> files, const std::string& source);
  ~HfTokenizer() override;
  HfTokenizer(const HfTokenizer&) = delete;
  HfTokenizer& operator=(const HfTokenizer&) = delete;

  // Reads the files of directory `dir` (tokenizer.json and those of kHfTokenizerFiles that exist).
  static std::shared_ptr<const HfTokenizer> load(const std::string& dir);

  std::int64_t size() const override { return size_; }
  std::vector<std::int32_t> encode(const std::string& text) const override;
  std::vector<std::int32_t> encode_prompt(const std::string& text) const override;
  // The bytes of the tokens; special added tokens decode to nothing, as `tokenizers`' decode with
  // skip_special_tokens. Bytes that are not valid UTF-8 stay as they are (`tokenizers` would
  // write U+FFFD); the SentencePiece family drops the "▁" prefix's space at the start, as its
  // decoder's Strip does.
  std::string decode(const std::vector<std::int32_t>& ids) const override;
  std::string token_bytes(std::int32_t id) const override;
  // The post-processor's first token (Llama's <|begin_of_text|> or <s>), else end_of_document()
  // (GPT-2's and Qwen's <|endoftext|>: a new document starts after it), else the newline's first token.
  std::int32_t start_token() const override;

  const std::map<std::string, std::string>& files() const override { return files_; }
  const std::string& sha256() const override { return sha256_; }
  std::string piece(std::int32_t id) const override;
  // tokenizer_config.json's eos_token (or special_tokens_map.json's), -1 without one.
  std::int32_t end_of_document() const override { return end_of_document_; }
  BlockCut block_cut() const override { return BlockCut::newline_between_non_space; }
  std::vector<std::int32_t> encode_block(const std::string& text, bool continues) const override;
  std::string kind() const override;

 private:
  enum class Normalizer { none, nfc, sentencepiece };
  void encode_into(const std::string& text, bool continues, std::vector<std::int32_t>& out) const;
  std::string normalize(std::string_view text) const;
  void encode_segment(std::string_view text, std::vector<std::int32_t>& out) const;
  void encode_word(std::string_view word, std::vector<std::int32_t>& out) const;
  const AddedToken* added(std::int32_t id) const;

  std::map<std::string, std::string> files_;
  std::string sha256_, source_;
  Normalizer normalizer_ = Normalizer::none;
  bool prepend_space_mark_ = false;  // the SentencePiece family: "▁" before each piece of text
  std::unique_ptr<HfPreTokenizer> pre_tokenizer_;
  std::unique_ptr<BpeModel> bpe_;             // byte-level BPE
  std::array<std::int32_t, 256> byte_ids_{};  // the id of each byte's symbol
  StringMap<std::int32_t> ids_by_bytes_;      // a whole token by the bytes it spells (ignore_merges)
  bool ignore_merges_ = false;
  std::unique_ptr<SubwordTokenizer> sentencepiece_;  // the SentencePiece family
  bool strip_leading_space_ = false;
  // No piece of the SentencePiece model holds a newline: text is encoded line by line, the same
  // ids as whole (no merge can span a newline) and several times faster in SentencePiece.
  bool sentencepiece_by_line_ = false;
  std::vector<AddedToken> added_;
  std::map<std::int32_t, std::size_t> added_by_id_;
  AddedTokenMatcher raw_matcher_, normalized_matcher_;
  std::vector<std::int32_t> prompt_prefix_, prompt_suffix_;
  std::int32_t end_of_document_ = -1;
  std::int64_t size_ = 0;
  // Words already merged, by their bytes: text repeats its words, and merging is the costly part.
  mutable std::shared_mutex cache_mutex_;
  mutable StringMap<std::vector<std::int32_t>> cache_;
};

}  // namespace gattn
