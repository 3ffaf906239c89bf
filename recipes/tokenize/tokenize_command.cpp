// `gattn tokenize train|encode` (docs/tokenize.md): a subword tokenizer trained on the user's text,
// and text turned into the token shards `data.kind: tokens` trains on. Both write their output
// directory whole or not at all (StagedDirectory).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <utility>
#include <vector>

#include "framework/data/corpus_encoding.h"
#include "framework/io/checkpoint.h"
#include "framework/io/staged_directory.h"
#include "framework/runtime/threads.h"
#include "framework/text/hf_tokenizer.h"
#include "framework/text/subword_tokenizer.h"
#include "framework/text/text_codec.h"
#include "framework/text/tokenizer_directory.h"
#include "framework/text/tokenizer_training.h"
#include "recipes/common/progress_bar.h"
#include "recipes/common/recipe.h"

namespace gattn::recipes {

namespace {

namespace fs = std::filesystem;

struct TrainArgs {
  TokenizerTrainingOptions options;
  std::string out;
  bool force = false;
};

struct EncodeArgs {
  CorpusEncodingOptions options;
  std::string tokenizer, out;
  bool force = false;
};

// What `tokenize train` and `tokenize encode` write into --out: an earlier output of the same
// command is recognised by these names (and its markers), and is all --force may replace.
OutputDirectoryKind tokenizer_output() {
  return {"tokenize train", {kTokenizerModelFile, kTokenizerInfoFile}, [](const std::string& name) {
            return name == kTokenizerModelFile || name == kTokenizerInfoFile || name == "vocab.txt";
          }};
}

// "train_000000.bin", "val_000012.bin": the shards TokenShardWriter names.
bool is_shard_name(const std::string& name) {
  for (const std::string split : {"train_", "val_"}) {
    if (name.size() < split.size() + 10 || name.compare(0, split.size(), split) != 0) continue;
    if (name.compare(name.size() - 4, 4, ".bin") != 0) continue;
    const std::string digits = name.substr(split.size(), name.size() - split.size() - 4);
    if (std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) return true;
  }
  return false;
}

OutputDirectoryKind shards_output() {
  return {"tokenize encode", {"meta.json"}, [](const std::string& name) {
            return name == "meta.json" || name == kTokenizerModelFile || name == kTokenizerInfoFile ||
                   name == kHfTokenizerConfigFile || name == kHfSpecialTokensFile || is_shard_name(name);
          }};
}

// SentencePiece's trainer asserts (an internal error) above this many threads.
constexpr int kMaxTrainerThreads = 128;

// --threads resolved as train.threads is: more threads than cores only fight over them (and a
// count no machine can start segfaults or aborts inside libgomp), so a larger one is clamped to the
// cores with one line; threads that cannot be started are refused naming the option (exit 2).
// `threads` 0 is the default: all cores, silently.
int checked_threads(int threads, const std::string& option, int cap) {
  if (threads < 0) throw ValueError(option + " must be >= 1, got " + std::to_string(threads));
  const ThreadCount count = resolve_thread_count(threads);
  int n = count.threads;
  if (count.clamped)
    std::cerr << "gattn: " << option << " " << threads << " is more than the " << n
              << " cores this process may use; using " << n << "\n";
  if (n > cap) {
    if (threads != 0)
      std::cerr << "gattn: " << option << " " << n << " is more than the " << cap << " threads it can use; using "
                << cap << "\n";
    n = cap;
  }
  const std::string why = probe_thread_start(n);
  if (!why.empty())
    throw ValueError(option + " " + std::to_string(threads) + ": " + why +
                     " (a memory or process limit?); set --threads lower");
  return n;
}

std::string megabytes(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MB", bytes / 1e6);
  return buf;
}

// vocab.txt: id, piece and the bytes it stands for (shown as display_token does), one per line.
std::string vocabulary_listing(const SubwordTokenizer& tokenizer) {
  std::string out;
  for (std::int32_t id = 0; id < tokenizer.size(); ++id)
    out += std::to_string(id) + "\t" + tokenizer.piece(id) + "\t" + display_token(tokenizer.token_bytes(id)) + "\n";
  return out;
}

int run_train(TrainArgs args) {
  args.options.threads = checked_threads(args.options.threads, "tokenize train --threads", kMaxTrainerThreads);
  std::vector<std::pair<std::string, std::string>> inputs;
  for (const auto& input : args.options.inputs) inputs.emplace_back("--input", input);
  StagedDirectory out(args.out, args.force, "tokenize train --out", tokenizer_output(), inputs);
  const TrainedTokenizer trained = train_tokenizer(args.options);
  const SubwordTokenizer tokenizer(trained.serialized_model, "the trained tokenizer");
  write_file_atomically(out.file(kTokenizerModelFile).string(), trained.serialized_model);
  write_file_atomically(out.file(kTokenizerInfoFile).string(), trained.info.dump(2) + "\n");
  write_file_atomically(out.file("vocab.txt").string(), vocabulary_listing(tokenizer));
  out.commit();
  std::printf("gattn tokenize: a %lld-piece %s tokenizer from %s (%lld lines) in %.1f s -> %s (sha256 %s)\n",
              static_cast<long long>(tokenizer.size()), args.options.model_type.c_str(),
              megabytes(trained.info["input_bytes"].get<double>()).c_str(),
              static_cast<long long>(trained.info["lines"].get<std::int64_t>()),
              trained.info["train_seconds"].get<double>(), args.out.c_str(), tokenizer.sha256().substr(0, 12).c_str());
  if (trained.info["lines_over_max_length_skipped"].get<std::int64_t>() > 0)
    std::fprintf(stderr, "gattn tokenize: warning: %lld lines longer than 65536 bytes were left out of training\n",
                 static_cast<long long>(trained.info["lines_over_max_length_skipped"].get<std::int64_t>()));
  return 0;
}

int run_encode(EncodeArgs args) {
  args.options.threads = checked_threads(args.options.threads, "tokenize encode --threads", 1 << 16);
  const std::shared_ptr<const Tokenizer> tokenizer = load_tokenizer(args.tokenizer);
  std::vector<std::pair<std::string, std::string>> inputs{{"--tokenizer", args.tokenizer}};
  for (const auto& input : args.options.inputs) inputs.emplace_back("--input", input);
  StagedDirectory out(args.out, args.force, "tokenize encode --out", shards_output(), inputs);
  ProgressBar bar("encoding");
  const nlohmann::json meta = encode_corpus(*tokenizer, args.options, out.path(),
                                            [&](std::uint64_t done, std::uint64_t total) { bar.update(done, total); });
  bar.finish();
  // The tokenizer travels with its shards: a run on them finds it there (docs/tokenize.md). A
  // Hugging Face tokenizer's files are its tokenizer.json and the rest; gattn's is tokenizer.model,
  // with the tokenizer.json that says how it was trained.
  for (const auto& [name, bytes] : tokenizer->files()) write_file_atomically(out.file(name).string(), bytes);
  const fs::path info = fs::path(args.tokenizer) / kTokenizerInfoFile;
  std::error_code ec;
  if (!tokenizer->files().count(kHfTokenizerFile) && fs::is_directory(args.tokenizer, ec) &&
      fs::is_regular_file(info, ec))
    fs::copy_file(info, out.file(kTokenizerInfoFile), fs::copy_options::overwrite_existing);
  write_file_atomically(out.file("meta.json").string(), meta.dump(2) + "\n");
  out.commit();
  const double bytes = meta["train_bytes"].get<double>() + meta["val_bytes"].get<double>();
  const auto tokens = meta["train_tokens"].get<std::int64_t>() + meta["val_tokens"].get<std::int64_t>();
  const double seconds = meta["encode_seconds"].get<double>();
  std::printf(
      "gattn tokenize: %s -> %lld train + %lld val tokens (%.2f bytes/token) in %zu shards, %.1f s (%.2f MB/s on %d "
      "threads) -> %s\n",
      megabytes(bytes).c_str(), static_cast<long long>(meta["train_tokens"].get<std::int64_t>()),
      static_cast<long long>(meta["val_tokens"].get<std::int64_t>()),
      tokens ? bytes / static_cast<double>(tokens) : 0.0, meta["shards"].size(), seconds,
      seconds > 0 ? bytes / seconds / 1e6 : 0.0, args.options.threads, args.out.c_str());
  return 0;
}

}  // namespace

Action add_tokenize(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("tokenize", "train a subword tokenizer; encode text into token shards");
  cmd->require_subcommand(1);

  auto train = std::make_shared<TrainArgs>();
  train->options.threads = 0;  // all cores
  CLI::App* t = cmd->add_subcommand("train", "train a SentencePiece tokenizer (BPE or unigram) on text files");
  t->add_option("--input", train->options.inputs, "UTF-8 text files")->required()->expected(1, -1);
  t->add_option("--vocab-size", train->options.vocab_size, "pieces, 260 to 65536 (256 of them are bytes)")->required();
  t->add_option("--model-type", train->options.model_type, "bpe or unigram")->capture_default_str();
  t->add_option("--out", train->out, "directory for tokenizer.model, tokenizer.json and vocab.txt")->required();
  t->add_option("--character-coverage", train->options.character_coverage,
                "share of characters that get pieces of their own; the rest are spelled in bytes")
      ->capture_default_str();
  t->add_option("--max-lines", train->options.max_lines, "train on a uniform sample of this many lines (0: all)")
      ->capture_default_str();
  t->add_option("--threads", train->options.threads, "trainer threads (0, the default: all cores; at most the cores)");
  t->add_flag("--force", train->force, "replace an existing --out directory");

  auto encode = std::make_shared<EncodeArgs>();
  encode->options.threads = 0;
  CLI::App* e = cmd->add_subcommand("encode", "encode text files into llm.c token shards (train and val)");
  e->add_option("--tokenizer", encode->tokenizer,
                "tokenizer directory (from tokenize train, or a Hugging Face one with tokenizer.json) or .model file")
      ->required();
  e->add_option("--input", encode->options.inputs, "UTF-8 text files, one document each")->required()->expected(1, -1);
  e->add_option("--out", encode->out, "directory for the shards, meta.json and the tokenizer")->required();
  e->add_option("--val-fraction", encode->options.val_fraction, "share of the text (its end) for the val split")
      ->capture_default_str();
  e->add_option("--shard-tokens", encode->options.shard_tokens, "tokens per shard")->capture_default_str();
  e->add_option("--threads", encode->options.threads,
                "encoding threads (0, the default: all cores; at most the cores)");
  e->add_flag("--force", encode->force, "replace an existing --out directory");

  return [t, e, train, encode] {
    if (t->parsed()) return run_train(*train);
    if (e->parsed()) return run_encode(*encode);
    return 2;
  };
}

}  // namespace gattn::recipes
