// Timing KV-cached generation on a run's latest checkpoint.
#include "recipes/ablate/generation_speed.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <vector>

#include "framework/data/dataset.h"
#include "framework/io/checkpoint.h"
#include "framework/runtime/threads.h"
#include "models/sampling.h"
#include "recipes/common/checkpoint_model.h"
#include "recipes/common/median.h"
#include "recipes/common/run_setup.h"

namespace gattn::recipes {

namespace fs = std::filesystem;

namespace {

// The name checkpoints/latest holds, "" when there is none.
std::string latest_name(const std::string& run_dir) {
  std::ifstream in(fs::path(run_dir) / "checkpoints" / "latest");
  std::string name;
  if (!(in >> name)) return "";
  return name;
}

// An encoder–decoder's workload: the first val example's source (its padding cut), or, when the
// run's data cannot be read from here, `fallback` content ids 3, 4, … (mod the vocabulary).
std::vector<std::int32_t> timing_source(const CheckpointModel& ckpt, std::int64_t fallback) {
  const models::ModelConfig& mc = ckpt.model->config();
  try {
    const std::unique_ptr<Dataset> data = make_dataset(data_options(ckpt.config), mc.block_size);
    const Batch batch = data->eval_batch(0, 1, mc.block_size);
    if (batch.source.defined()) {
      std::vector<std::int32_t> source = row_ids_until(batch.source, 0, is_seq2seq_pad);
      if (!source.empty()) return source;
    }
  } catch (const std::exception&) {
    // the stand-in below
  }
  std::vector<std::int32_t> source;
  const std::int64_t content = std::max<std::int64_t>(1, mc.vocab_size - kSeq2SeqFirstContent);
  for (std::int64_t i = 0; i < std::clamp<std::int64_t>(fallback, 1, mc.block_size); ++i)
    source.push_back(static_cast<std::int32_t>(kSeq2SeqFirstContent + i % content));
  return source;
}

}  // namespace

nlohmann::json to_json(const GenerationSpeed& g) {
  return {{"tokens_per_s", g.tokens_per_s},   {"batch", g.batch},          {"prompt_tokens", g.prompt_tokens},
          {"new_tokens", g.new_tokens},       {"repeats", g.repeats},      {"threads", g.threads},
          {"source_tokens", g.source_tokens}, {"checkpoint", g.checkpoint}};
}

GenerationSpeed measure_generation(const std::string& run_dir, std::int64_t new_tokens, std::int64_t prompt_tokens) {
  CheckpointModel ckpt = load_checkpoint_model(run_dir, {}, "ablate");
  models::GPT& model = *ckpt.model;
  model.eval();
  const models::ModelConfig& mc = model.config();
  GenerationSpeed out;
  out.new_tokens = new_tokens;
  out.threads = num_threads();
  out.checkpoint = fs::path(ckpt.model_path).parent_path().filename().string();
  models::SamplingOptions greedy;
  greedy.temperature = 0;
  std::function<void()> generate_once;
  std::vector<std::int32_t> prompt;
  if (mc.encoder_decoder()) {
    // models::generate needs a decoder: the target of a source, whose length is up to the model.
    prompt = timing_source(ckpt, prompt_tokens);
    out.source_tokens = static_cast<std::int64_t>(prompt.size());
    generate_once = [&] { models::generate_target(model, prompt, new_tokens, greedy); };
    // Greedy decoding draws the same tokens every time: the steps of one generation, end included.
    const auto kept = static_cast<std::int64_t>(models::generate_target(model, prompt, new_tokens, greedy).size());
    const std::int64_t limit = std::min(new_tokens, mc.block_size);
    out.new_tokens = kept < limit ? kept + 1 : kept;
  } else {
    out.prompt_tokens = std::clamp<std::int64_t>(prompt_tokens, 1, mc.block_size);
    for (std::int64_t i = 0; i < out.prompt_tokens; ++i) prompt.push_back(static_cast<std::int32_t>(i % mc.vocab_size));
    generate_once = [&] { models::generate(model, prompt, new_tokens, greedy); };
    generate_once();  // allocator, caches and threads warm up
  }
  using clock = std::chrono::steady_clock;
  // A few milliseconds per repeat at the small configs, where one repeat's time swings with the
  // OpenMP pool's wake-ups: at least kMinRepeats and kEnoughSeconds, the median of them.
  constexpr int kMinRepeats = 5, kMaxRepeats = 200;
  constexpr double kEnoughSeconds = 0.4;
  std::vector<double> times;
  double spent = 0;
  while (static_cast<int>(times.size()) < kMaxRepeats &&
         (static_cast<int>(times.size()) < kMinRepeats || spent < kEnoughSeconds)) {
    const auto start = clock::now();
    generate_once();
    times.push_back(std::chrono::duration<double>(clock::now() - start).count());
    spent += times.back();
  }
  const double middle = median(times);
  out.repeats = static_cast<std::int64_t>(times.size());
  out.tokens_per_s = middle > 0 ? static_cast<double>(out.new_tokens) / middle : 0.0;
  return out;
}

void write_generation(const std::string& run_dir, const GenerationSpeed& speed) {
  write_file_atomically((fs::path(run_dir) / kGenerationFile).string(), to_json(speed).dump() + "\n");
}

std::optional<double> read_generation_tokens_per_s(const std::string& run_dir) {
  std::ifstream in(fs::path(run_dir) / kGenerationFile);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, false);
  if (!j.is_object() || !j.contains("tokens_per_s") || !j["tokens_per_s"].is_number() || !j.contains("checkpoint") ||
      !j["checkpoint"].is_string())
    return std::nullopt;
  if (j["checkpoint"].get<std::string>() != latest_name(run_dir)) return std::nullopt;
  return j["tokens_per_s"].get<double>();
}

}  // namespace gattn::recipes
