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
  if (!(o.character_coverage > 0 && o.character_coverage <= 1))
    throw ValueError("tokenize train: --character-coverage must be in (0, 1], got " +
                     std::to_string(o.character_coverage));
  if (o.max_lines < 0) throw ValueError("tokenize train: --max-lines must be >= 0");
  if (o.threads < 1) throw ValueError("tokenize train: --threads must be >= 1");
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
  if (!status.ok())
    throw DataError("tokenize train: SentencePiece could not learn " + std::to_string(options.vocab_size) +
                    " pieces from the input: " + std::string(status.message()));
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
