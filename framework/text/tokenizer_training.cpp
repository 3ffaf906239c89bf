// train_tokenizer: the input files streamed line by line into SentencePiece's trainer.
#include "framework/text/tokenizer_training.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <chrono>
#include <memory>
#include <unordered_map>

#include "framework/base/errors.h"
#include "framework/text/subword_tokenizer.h"
#include "framework/text/text_blocks.h"

namespace gattn {

namespace {

// SentencePiece drops training lines longer than this; gattn's default is 16 times SentencePiece's.
constexpr std::int64_t kMaxLineBytes = 65536;

// The non-empty lines of the input files, one after another; counts lines on the way.
class LineReader : public sentencepiece::SentenceIterator {
 public:
  explicit LineReader(const std::vector<std::string>& files) : files_(files) { advance(); }

  bool done() const override { return done_; }
  void Next() override { advance(); }
  const std::string& value() const override { return line_; }
  sentencepiece::util::Status status() const override { return {}; }

  std::int64_t lines() const { return lines_; }
  std::int64_t long_lines() const { return long_lines_; }

 private:
  void advance() {
    while (true) {
      if (at_ >= block_.size()) {
        at_ = 0;
        while (!reader_ || !reader_->next(block_)) {
          if (next_file_ == files_.size()) {
            done_ = true;
            return;
          }
          reader_ = std::make_unique<TextBlocks>(files_[next_file_++], "the tokenizer's training text");
        }
      }
      std::size_t end = block_.find('\n', at_);
      if (end == std::string::npos) end = block_.size();
      line_.assign(block_, at_, end - at_);
      at_ = end + 1;
      if (line_.empty()) continue;
      ++lines_;
      long_lines_ += static_cast<std::int64_t>(line_.size()) > kMaxLineBytes;
      return;
    }
  }

  const std::vector<std::string>& files_;
  std::size_t next_file_ = 0;
  std::unique_ptr<TextBlocks> reader_;
  std::string block_, line_;
  std::size_t at_ = 0;
  bool done_ = false;
  std::int64_t lines_ = 0, long_lines_ = 0;
};

void check_options(const TokenizerTrainingOptions& o) {
  if (o.inputs.empty()) throw ValueError("tokenize train: no --input files given");
  if (o.vocab_size < kMinTokenizerVocab || o.vocab_size > kMaxTokenizerVocab)
    throw ValueError("tokenize train: --vocab-size " + std::to_string(o.vocab_size) + " is outside [" +
                     std::to_string(kMinTokenizerVocab) + ", " + std::to_string(kMaxTokenizerVocab) +
                     "]: 256 byte pieces and 3 control pieces come first, and token shards store ids as uint16");
  if (o.model_type != "bpe" && o.model_type != "unigram")
    throw ValueError("tokenize train: --model-type must be bpe or unigram, got '" + o.model_type + "'");
  // SentencePiece's own floors, checked here so they are usage errors in gattn's words.
  if (!(o.character_coverage >= 0.98 && o.character_coverage <= 1))
    throw ValueError("tokenize train: --character-coverage must be in [0.98, 1], got " +
                     std::to_string(o.character_coverage));
  if (o.max_lines < 0 || (o.max_lines > 0 && o.max_lines <= 100))
    throw ValueError(
        "tokenize train: --max-lines must be 0 (every line) or more than 100 (the smallest sample "
        "SentencePiece trains on), got " +
        std::to_string(o.max_lines));
  if (o.threads < 1) throw ValueError("tokenize train: --threads must be >= 1");
}

// The number after `marker` in `text`, or -1.
long long number_after(const std::string& text, const std::string& marker) {
  const std::size_t at = text.find(marker);
  if (at == std::string::npos) return -1;
  std::size_t i = at + marker.size();
  long long n = 0;
  bool any = false;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, any = true) n = n * 10 + (text[i] - '0');
  return any ? n : -1;
}

// SentencePiece's failure in the user's terms: its messages name its own flags (--character_coverage)
// and assertions ([!sentences_.empty()]). A vocabulary the text cannot fill is a data error (exit 3);
// one too small for the text's characters is a setting to change (exit 2).
[[noreturn]] void explain_training_failure(const TokenizerTrainingOptions& o, const std::string& why) {
  const std::string vocab = "--vocab-size " + std::to_string(o.vocab_size);
  if (why.find("smaller than required_chars") != std::string::npos) {
    const long long needed = number_after(why, " vs ");
    throw ValueError("tokenize train: " + vocab +
                     " is too small for this text: the 256 byte pieces, 3 control pieces and a piece for each "
                     "character of the text (all but the rarest, --character-coverage " +
                     std::to_string(o.character_coverage) + ") need " +
                     (needed > 0 ? std::to_string(needed) : std::string("more")) + "; use --vocab-size " +
                     (needed > 0 ? std::to_string(needed) + " or more" : std::string("larger")) +
                     ", or a lower --character-coverage (down to 0.98)");
  }
  if (why.find("Vocabulary size too high") != std::string::npos) {
    const long long most = number_after(why, "value <= ");
    throw DataError("tokenize train: " + vocab + " is more than the input can fill" +
                    (most > 0 ? " (at most " + std::to_string(most) + " pieces)" : std::string()) +
                    "; use a smaller --vocab-size or more text");
  }
  if (why.find("sentences_.empty()") != std::string::npos)
    throw DataError(
        "tokenize train: no line of the input could be used for training (each is empty or longer "
        "than 65536 bytes)");
  throw DataError("tokenize train: SentencePiece could not learn " + std::to_string(o.vocab_size) +
                  " pieces from the input: " + why);
}

}  // namespace

TrainedTokenizer train_tokenizer(const TokenizerTrainingOptions& options) {
  check_options(options);
  nlohmann::json inputs = nlohmann::json::array();
  std::int64_t total_bytes = 0;
  for (const auto& file : options.inputs) {
    const std::uint64_t bytes = TextBlocks(file, "the tokenizer's training text").size();
    inputs.push_back({{"path", file}, {"bytes", bytes}});
    total_bytes += static_cast<std::int64_t>(bytes);
  }
  const std::unordered_map<std::string, std::string> spec{
      {"model_type", options.model_type},
      {"vocab_size", std::to_string(options.vocab_size)},
      {"character_coverage", std::to_string(options.character_coverage)},
      // Exact round trips: bytes in, the same bytes out.
      {"normalization_rule_name", "identity"},
      {"remove_extra_whitespaces", "false"},
      {"add_dummy_prefix", "false"},
      {"byte_fallback", "true"},
      {"allow_whitespace_only_pieces", "true"},
      {"split_digits", "true"},
      {"max_sentence_length", std::to_string(kMaxLineBytes)},
      {"input_sentence_size", std::to_string(options.max_lines)},
      {"shuffle_input_sentence", "true"},
      {"num_threads", std::to_string(options.threads)},
      {"minloglevel", "2"},  // SentencePiece's progress log is pages long; gattn prints its own line
  };
  sentencepiece::SetRandomGeneratorSeed(1);  // the line sample is the same every run
  LineReader lines(options.inputs);
  if (lines.done()) throw DataError("tokenize train: the input holds no text (every file is empty or blank)");
  TrainedTokenizer out;
  const auto start = std::chrono::steady_clock::now();
  const auto status = sentencepiece::SentencePieceTrainer::Train(spec, &lines, &out.serialized_model);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!status.ok()) explain_training_failure(options, std::string(status.message()));
  const SubwordTokenizer check(out.serialized_model, "the trained tokenizer");  // loads, or says why not
  out.info = {{"format", "gattn-tokenizer/1"},
              {"library", "sentencepiece"},
              {"model_type", options.model_type},
              {"vocab_size", check.size()},
              {"sha256", check.sha256()},
              {"character_coverage", options.character_coverage},
              {"inputs", inputs},
              {"input_bytes", total_bytes},
              {"lines", lines.lines()},
              {"lines_over_max_length_skipped", lines.long_lines()},
              {"max_lines", options.max_lines},
              {"train_seconds", seconds}};
  return out;
}

}  // namespace gattn
