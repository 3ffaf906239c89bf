// HfTokenizer: tokenizer.json read and checked, and the encoding pipeline of `tokenizers` for the
// two families gattn implements.
#include "framework/text/hf_tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>

#include "framework/base/errors.h"
#include "framework/base/input_file.h"
#include "framework/text/byte_level.h"
#include "framework/text/digest.h"
#include "framework/text/sentencepiece_proto.h"
#include "framework/text/subword_tokenizer.h"
#include "framework/text/unicode_nfc.h"

namespace gattn {

namespace {

using nlohmann::json;

const std::string kSpaceMark = "\xE2\x96\x81";  // "▁", SentencePiece's space

// A word longer than this is merged without being cached: long words are rare, and a cache of
// them would only grow.
constexpr std::size_t kMaxCachedWord = 256;
constexpr std::size_t kMaxCacheEntries = 1 << 18;

std::string type_of(const json& spec) {
  return spec.is_object() && spec.contains("type") && spec["type"].is_string() ? spec["type"].get<std::string>() : "";
}

// The components of a Sequence (normalizer, decoder, post-processor), or the component alone.
std::vector<json> flattened(const json& spec, const char* list) {
  if (spec.is_null()) return {};
  if (type_of(spec) != "Sequence") return {spec};
  std::vector<json> out;
  if (spec.contains(list) && spec[list].is_array())
    for (const json& s : spec[list]) {
      const std::vector<json> inner = flattened(s, list);
      out.insert(out.end(), inner.begin(), inner.end());
    }
  return out;
}

bool json_flag(const json& spec, const char* name, bool fallback) {
  return spec.contains(name) && spec[name].is_boolean() ? spec[name].get<bool>() : fallback;
}

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  for (std::size_t at = 0;;) {
    const std::size_t next = text.find(from, at);
    if (next == std::string_view::npos) {
      out.append(text.substr(at));
      return out;
    }
    out.append(text.substr(at, next - at)).append(to);
    at = next + from.size();
  }
}

// A special token's name in tokenizer_config.json or special_tokens_map.json: a string, or an
// object with "content".
std::string token_name(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object() && value.contains("content") && value["content"].is_string())
    return value["content"].get<std::string>();
  return "";
}

}  // namespace

bool is_hf_tokenizer_json(const std::string& bytes) {
  const json j = json::parse(bytes, nullptr, false);
  return j.is_object() && j.contains("model") && j["model"].is_object() && j["model"].contains("type");
}

std::string hf_tokenizer_sha256(const std::map<std::string, std::string>& files) {
  std::string bytes;
  if (auto it = files.find(kHfTokenizerFile); it != files.end()) bytes += it->second;
  if (auto it = files.find(kTokenizerModelFile); it != files.end()) bytes += it->second;
  return sha256_hex(bytes);
}

std::shared_ptr<const HfTokenizer> HfTokenizer::load(const std::string& dir) {
  namespace fs = std::filesystem;
  std::map<std::string, std::string> files;
  std::error_code ec;
  for (const char* name : kHfTokenizerFiles) {
    const fs::path path = fs::path(dir) / name;
    if (std::string(name) != kHfTokenizerFile && !fs::exists(path, ec)) continue;
    files[name] = read_input_file<DataError>(path.string(), std::string("the tokenizer's ") + name);
  }
  return std::make_shared<const HfTokenizer>(std::move(files), dir);
}

HfTokenizer::HfTokenizer(std::map<std::string, std::string> files, const std::string& source)
    : files_(std::move(files)), sha256_(hf_tokenizer_sha256(files_)), source_(source) {
  const std::string where = source_ + "/" + kHfTokenizerFile;
  const auto file = files_.find(kHfTokenizerFile);
  if (file == files_.end()) throw DataError(source_ + " has no " + kHfTokenizerFile);
  const json spec = json::parse(file->second, nullptr, false);
  if (!spec.is_object()) throw DataError(where + " is not a JSON object");
  if (!spec.contains("model") || !spec["model"].is_object())
    throw DataError(where + " has no \"model\" object: not a Hugging Face tokenizer");
  const json& model = spec["model"];
  const std::string model_type = type_of(model);
  if (model_type != "BPE")
    throw ValueError(where + ": the model is " + (model_type.empty() ? "of no type" : "a " + model_type) +
                     "; gattn reads BPE tokenizers only (byte-level, as GPT-2, Llama 3 and Qwen, or with byte "
                     "fallback and a tokenizer.model, as Llama 2)");
  if (model.contains("dropout") && !model["dropout"].is_null() &&
      !(model["dropout"].is_number() && model["dropout"].get<double>() == 0))
    throw ValueError(where + ": BPE dropout " + model["dropout"].dump() +
                     " makes encoding random; gattn encodes deterministically");
  for (const char* affix : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (model.contains(affix) && !model[affix].is_null() && model[affix] != "")
      throw ValueError(where + ": the BPE's " + affix + " " + model[affix].dump() +
                       " is not implemented (byte-level tokenizers have none)");
  if (!model.contains("vocab") || !model["vocab"].is_object())
    throw DataError(where + ": the model has no \"vocab\" object");
  StringMap<std::int32_t> vocab;
  for (const auto& [token, id] : model["vocab"].items()) {
    if (!id.is_number_integer() || id.get<std::int64_t>() < 0 || id.get<std::int64_t>() > INT32_MAX)
      throw DataError(where + ": the vocabulary's id of '" + token + "' is not an id (" + id.dump() + ")");
    vocab.emplace(token, static_cast<std::int32_t>(id.get<std::int64_t>()));
  }

  // Added tokens. Their ids are tokenizers': a token the vocabulary has keeps its id there, any
  // other takes the next id after the vocabulary and the added tokens before it, in the order of
  // the ids the file gives (which tokenizers only checks, and which agree in files it wrote).
  const json added = spec.contains("added_tokens") ? spec["added_tokens"] : json::array();
  if (!added.is_array()) throw DataError(where + ": \"added_tokens\" is not a list");
  std::vector<std::pair<std::int64_t, AddedToken>> listed;
  for (const json& a : added) {
    if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() || a["id"].get<std::int64_t>() < 0 ||
        a["id"].get<std::int64_t>() > INT32_MAX || !a.contains("content") || !a["content"].is_string() ||
        a["content"].get<std::string>().empty())
      throw DataError(where + ": an added token is not {\"id\", \"content\", …}: " + a.dump().substr(0, 200));
    AddedToken t;
    t.content = a["content"].get<std::string>();
    t.special = json_flag(a, "special", false);
    t.lstrip = json_flag(a, "lstrip", false);
    t.rstrip = json_flag(a, "rstrip", false);
    t.normalized = json_flag(a, "normalized", !t.special);
    t.single_word = json_flag(a, "single_word", false);
    listed.emplace_back(a["id"].get<std::int64_t>(), std::move(t));
  }
  std::stable_sort(listed.begin(), listed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  const auto vocab_count = static_cast<std::int64_t>(vocab.size());
  std::int64_t largest = -1;
  std::set<std::string> seen;
  for (auto& [file_id, t] : listed) {
    if (!seen.insert(t.content).second) continue;  // tokenizers adds a token once
    const auto in_vocab = vocab.find(t.content);
    std::int64_t id = in_vocab != vocab.end()  ? in_vocab->second
                      : largest < 0            ? vocab_count
                      : largest >= vocab_count ? largest + 1
                                               : vocab_count;
    if (id > INT32_MAX) throw DataError(where + ": too many added tokens");
    t.id = static_cast<std::int32_t>(id);
    largest = std::max(largest, id);
    added_by_id_[t.id] = added_.size();
    added_.push_back(std::move(t));
  }

  const bool byte_fallback = json_flag(model, "byte_fallback", false);
  const json normalizer = spec.contains("normalizer") ? spec["normalizer"] : json();
  const json pre_tokenizer = spec.contains("pre_tokenizer") ? spec["pre_tokenizer"] : json();
  const json decoder = spec.contains("decoder") ? spec["decoder"] : json();
  std::vector<std::pair<std::string, std::string>> merges;
  if (!model.contains("merges") || !model["merges"].is_array())
    throw DataError(where + ": the model has no \"merges\" list");
  for (const json& m : model["merges"]) {
    // Two formats: "a b" (older files, GPT-2's) and ["a", "b"] (tokenizers 0.20 and later).
    if (m.is_string()) {
      const std::string s = m.get<std::string>();
      const std::size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
        throw DataError(where + ": merge \"" + s + "\" is not two tokens separated by one space");
      merges.emplace_back(s.substr(0, space), s.substr(space + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      throw DataError(where + ": merge " + m.dump().substr(0, 100) + " is neither \"a b\" nor [\"a\", \"b\"]");
    }
  }

  if (byte_fallback) {
    // Llama 2's family: SentencePiece applies tokenizer.model; tokenizer.json says how text reaches it.
    const auto sp = files_.find(kTokenizerModelFile);
    if (sp == files_.end())
      throw ValueError(where +
                       ": a BPE with byte fallback (Llama 2's family) is read through its tokenizer.model, "
                       "which " +
                       source_ + " does not have");
    if (!pre_tokenizer.is_null())
      throw ValueError(where + ": a " + type_of(pre_tokenizer) +
                       " pre-tokenizer with byte fallback is not implemented (gattn reads Llama 2's files: "
                       "a Prepend/Replace normalizer and no pre-tokenizer)");
    const std::vector<json> steps = flattened(normalizer, "normalizers");
    std::size_t i = 0;
    if (i < steps.size() && type_of(steps[i]) == "Prepend" && steps[i].value("prepend", "") == kSpaceMark) {
      prepend_space_mark_ = true;
      ++i;
    }
    const bool replaces = i < steps.size() && type_of(steps[i]) == "Replace" && steps[i].contains("pattern") &&
                          steps[i]["pattern"] == json{{"String", " "}} && steps[i].value("content", "") == kSpaceMark;
    if (!replaces || i + 1 != steps.size())
      throw ValueError(where + ": the normalizer " + normalizer.dump().substr(0, 200) +
                       " is not implemented with byte fallback (gattn reads Llama 2's: Prepend(\"▁\") then "
                       "Replace(\" \", \"▁\"))");
    normalizer_ = Normalizer::sentencepiece;
    try {
      sentencepiece_ = std::make_unique<SubwordTokenizer>(
          sentencepiece_with_plain_normalizer(sp->second, source_ + "/tokenizer.model"), source_ + "/tokenizer.model");
    } catch (const ValueError& e) {
      throw DataError(e.what());
    }
    for (std::int32_t id = 0; id < sentencepiece_->size(); ++id) {
      const auto it = vocab.find(sentencepiece_->piece(id));
      if (it == vocab.end() || it->second != id)
        throw DataError(where + " and tokenizer.model disagree: piece " + std::to_string(id) + " is '" +
                        sentencepiece_->piece(id) + "' in tokenizer.model (files of two tokenizers?)");
    }
    if (static_cast<std::int64_t>(vocab.size()) != sentencepiece_->size())
      throw DataError(where + " has " + std::to_string(vocab.size()) + " tokens, tokenizer.model " +
                      std::to_string(sentencepiece_->size()) + " (files of two tokenizers?)");
    sentencepiece_by_line_ = true;
    for (std::int32_t id = 0; id < sentencepiece_->size(); ++id)
      if (sentencepiece_->piece(id).find('\n') != std::string::npos) sentencepiece_by_line_ = false;
    BpeModel check(std::move(vocab), merges, where);  // merges naming unknown tokens are damage here too
    size_ = check.size();
    for (const json& d : flattened(decoder, "decoders"))
      if (type_of(d) == "Strip") strip_leading_space_ = d.value("start", 0) > 0;
  } else {
    bpe_ = std::make_unique<BpeModel>(std::move(vocab), merges, where);
    size_ = bpe_->size();
    ignore_merges_ = json_flag(model, "ignore_merges", false);
    for (const json& n : flattened(normalizer, "normalizers")) {
      if (type_of(n) != "NFC")
        throw ValueError(where + ": a " + type_of(n) +
                         " normalizer is not implemented (gattn reads none or NFC in byte-level tokenizers)");
      normalizer_ = Normalizer::nfc;
    }
    pre_tokenizer_ = std::make_unique<HfPreTokenizer>(pre_tokenizer, where);
    const std::string text_pre = pre_tokenizer.dump();
    if (text_pre.find("\"ByteLevel\"") == std::string::npos)
      throw ValueError(where +
                       ": the pre-tokenizer has no ByteLevel step: not a byte-level BPE (gattn reads "
                       "byte-level BPE, and Llama 2's byte-fallback BPE)");
    const std::vector<json> decoders = flattened(decoder, "decoders");
    if (decoders.size() != 1 || type_of(decoders[0]) != "ByteLevel")
      throw ValueError(where + ": the decoder " + decoder.dump().substr(0, 200) +
                       " is not implemented for a byte-level BPE (gattn reads ByteLevel)");
    for (int b = 0; b < 256; ++b) {
      const auto id = bpe_->id(byte_level_char(static_cast<unsigned char>(b)));
      if (!id)
        throw DataError(where + ": the byte-level vocabulary has no token for byte " + std::to_string(b) + " ('" +
                        byte_level_char(static_cast<unsigned char>(b)) + "'), so some text cannot be encoded");
      byte_ids_[static_cast<std::size_t>(b)] = *id;
    }
    if (ignore_merges_)
      for (const auto& [token, id] : bpe_->vocab())
        if (auto bytes = byte_level_bytes(token)) ids_by_bytes_.emplace(std::move(*bytes), id);
  }

  // The matchers: tokens matched in the raw text, and those matched after normalization.
  std::vector<AddedToken> raw, normalized;
  std::vector<std::string> raw_patterns, normalized_patterns;
  for (const AddedToken& t : added_) {
    size_ = std::max<std::int64_t>(size_, t.id + 1);
    if (t.normalized) {
      normalized.push_back(t);
      normalized_patterns.push_back(normalize(t.content));
    } else {
      raw.push_back(t);
      raw_patterns.push_back(t.content);
    }
  }
  raw_matcher_ = AddedTokenMatcher(std::move(raw), std::move(raw_patterns));
  normalized_matcher_ = AddedTokenMatcher(std::move(normalized), std::move(normalized_patterns));

  // The post-processor: what frames a single sequence.
  const json post = spec.contains("post_processor") ? spec["post_processor"] : json();
  for (const json& p : flattened(post, "processors")) {
    const std::string type = type_of(p);
    if (type == "ByteLevel") continue;  // it moves offsets only
    if (type != "TemplateProcessing")
      throw ValueError(where + ": a " + type +
                       " post-processor is not implemented (gattn reads ByteLevel and TemplateProcessing)");
    if (!p.contains("single") || !p["single"].is_array())
      throw DataError(where + ": the TemplateProcessing has no \"single\" template");
    bool after = false;
    for (const json& piece : p["single"]) {
      if (piece.contains("Sequence")) {
        after = true;
        continue;
      }
      const std::string name = piece.contains("SpecialToken") && piece["SpecialToken"].is_object()
                                   ? piece["SpecialToken"].value("id", "")
                                   : "";
      const json& table = p.contains("special_tokens") ? p["special_tokens"] : json::object();
      if (name.empty() || !table.contains(name) || !table[name].contains("ids") || !table[name]["ids"].is_array())
        throw DataError(where + ": the template names a special token " + piece.dump().substr(0, 100) +
                        " that its special_tokens do not give ids");
      for (const json& id : table[name]["ids"]) {
        if (!id.is_number_integer() || id.get<std::int64_t>() < 0 || id.get<std::int64_t>() >= size_)
          throw DataError(where + ": the template's " + name + " has id " + id.dump() + ", outside the vocabulary");
        (after ? prompt_suffix_ : prompt_prefix_).push_back(static_cast<std::int32_t>(id.get<std::int64_t>()));
      }
    }
  }

  // The end of a document: eos_token.
  for (const char* name : {kHfTokenizerConfigFile, kHfSpecialTokensFile}) {
    const auto f = files_.find(name);
    if (f == files_.end() || end_of_document_ >= 0) continue;
    const json config = json::parse(f->second, nullptr, false);
    if (!config.is_object()) throw DataError(source_ + "/" + name + " is not a JSON object");
    if (!config.contains("eos_token")) continue;
    const std::string eos = token_name(config["eos_token"]);
    if (eos.empty()) continue;
    for (const AddedToken& t : added_)
      if (t.content == eos) end_of_document_ = t.id;
    if (end_of_document_ < 0 && bpe_)
      if (auto id = bpe_->id(eos)) end_of_document_ = *id;
    if (end_of_document_ < 0 && sentencepiece_)
      for (std::int32_t id = 0; id < sentencepiece_->size() && end_of_document_ < 0; ++id)
        if (sentencepiece_->piece(id) == eos) end_of_document_ = id;
    if (end_of_document_ < 0)
      throw DataError(source_ + "/" + name + ": eos_token '" + eos + "' is not a token of " + kHfTokenizerFile);
  }
}

HfTokenizer::~HfTokenizer() = default;

std::string HfTokenizer::kind() const {
  return sentencepiece_ ? "Hugging Face (SentencePiece BPE with byte fallback)" : "Hugging Face (byte-level BPE)";
}

const AddedToken* HfTokenizer::added(std::int32_t id) const {
  const auto it = added_by_id_.find(id);
  return it == added_by_id_.end() ? nullptr : &added_[it->second];
}

std::string HfTokenizer::normalize(std::string_view text) const {
  switch (normalizer_) {
    case Normalizer::nfc:
      return to_nfc(text);
    case Normalizer::sentencepiece:
      return text.empty() ? std::string()
                          : (prepend_space_mark_ ? kSpaceMark : "") + replace_all(text, " ", kSpaceMark);
    case Normalizer::none:
      break;
  }
  return std::string(text);
}

void HfTokenizer::encode_word(std::string_view word, std::vector<std::int32_t>& out) const {
  if (ignore_merges_) {
    if (const auto it = ids_by_bytes_.find(word); it != ids_by_bytes_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  const bool cacheable = word.size() <= kMaxCachedWord;
  if (cacheable) {
    std::shared_lock lock(cache_mutex_);
    if (const auto it = cache_.find(word); it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<std::int32_t> symbols(word.size());
  for (std::size_t i = 0; i < word.size(); ++i) symbols[i] = byte_ids_[static_cast<unsigned char>(word[i])];
  bpe_->merge(symbols);
  out.insert(out.end(), symbols.begin(), symbols.end());
  if (cacheable) {
    std::unique_lock lock(cache_mutex_);
    if (cache_.size() < kMaxCacheEntries) cache_.emplace(std::string(word), std::move(symbols));
  }
}

void HfTokenizer::encode_segment(std::string_view text, std::vector<std::int32_t>& out) const {
  if (text.empty()) return;
  if (sentencepiece_) {
    for (std::size_t at = 0; at < text.size();) {
      std::size_t end = sentencepiece_by_line_ ? text.find('\n', at) : std::string_view::npos;
      end = end == std::string_view::npos ? text.size() : end + 1;
      const std::vector<std::int32_t> ids = sentencepiece_->encode(std::string(text.substr(at, end - at)));
      out.insert(out.end(), ids.begin(), ids.end());
      at = end;
    }
    return;
  }
  std::vector<std::string_view> words;
  std::deque<std::string> arena;
  pre_tokenizer_->split(text, words, arena);
  for (std::string_view word : words) encode_word(word, out);
}

void HfTokenizer::encode_into(const std::string& text, bool continues, std::vector<std::int32_t>& out) const {
  require_utf8(text, "the tokenizer");
  std::vector<TextSegment> raw, inner;
  raw_matcher_.split(text, raw);
  for (const TextSegment& r : raw) {
    if (r.id >= 0) {
      out.push_back(r.id);
      continue;
    }
    std::string_view piece = std::string_view(text).substr(r.begin, r.end - r.begin);
    // A block that continues a document gets no "▁" mark at its start: only the document's start has it.
    std::string normalized;
    if (normalizer_ == Normalizer::sentencepiece && continues && r.begin == 0)
      normalized = replace_all(piece, " ", kSpaceMark);
    else
      normalized = normalize(piece);
    if (normalized_matcher_.empty()) {
      encode_segment(normalized, out);
      continue;
    }
    normalized_matcher_.split(normalized, inner);
    for (const TextSegment& n : inner) {
      if (n.id >= 0)
        out.push_back(n.id);
      else
        encode_segment(std::string_view(normalized).substr(n.begin, n.end - n.begin), out);
    }
  }
}

std::vector<std::int32_t> HfTokenizer::encode(const std::string& text) const {
  std::vector<std::int32_t> out;
  encode_into(text, false, out);
  return out;
}

std::vector<std::int32_t> HfTokenizer::encode_block(const std::string& text, bool continues) const {
  std::vector<std::int32_t> out;
  encode_into(text, continues, out);
  return out;
}

std::vector<std::int32_t> HfTokenizer::encode_prompt(const std::string& text) const {
  std::vector<std::int32_t> out = prompt_prefix_;
  encode_into(text, false, out);
  out.insert(out.end(), prompt_suffix_.begin(), prompt_suffix_.end());
  return out;
}

std::string HfTokenizer::token_bytes(std::int32_t id) const {
  if (const AddedToken* t = added(id)) {
    if (t->special) return "";
    if (sentencepiece_) return replace_all(t->content, kSpaceMark, " ");
    // The ByteLevel decoder: a token of the byte alphabet spells bytes, any other is its own text.
    return byte_level_bytes(t->content).value_or(t->content);
  }
  if (sentencepiece_) return id >= 0 && id < sentencepiece_->size() ? sentencepiece_->token_bytes(id) : "";
  const std::string* token = bpe_->token(id);
  if (!token) return "";
  return byte_level_bytes(*token).value_or(*token);
}

std::string HfTokenizer::decode(const std::vector<std::int32_t>& ids) const {
  std::string out;
  for (std::int32_t id : ids) out += token_bytes(id);  // ids outside the vocabulary give nothing, as ByteVocab's
  if (strip_leading_space_ && !out.empty() && out[0] == ' ') out.erase(0, 1);
  return out;
}

std::string HfTokenizer::piece(std::int32_t id) const {
  if (const AddedToken* t = added(id)) return t->content;
  if (sentencepiece_) return sentencepiece_->piece(id);
  const std::string* token = bpe_->token(id);
  return token ? *token : "";
}

std::int32_t HfTokenizer::start_token() const {
  if (!prompt_prefix_.empty()) return prompt_prefix_.front();
  if (end_of_document_ >= 0) return end_of_document_;
  const std::vector<std::int32_t> newline = encode("\n");
  return newline.empty() ? 0 : newline.front();
}

}  // namespace gattn
