// Timing KV-cached generation on a run's latest checkpoint.
#include "recipes/ablate/generation_speed.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "framework/io/checkpoint.h"
#include "framework/runtime/threads.h"
#include "models/sampling.h"
#include "recipes/common/checkpoint_model.h"
#include "recipes/common/median.h"

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

}  // namespace

nlohmann::json to_json(const GenerationSpeed& g) {
  return {{"tokens_per_s", g.tokens_per_s}, {"batch", g.batch},     {"prompt_tokens", g.prompt_tokens},
          {"new_tokens", g.new_tokens},     {"repeats", g.repeats}, {"threads", g.threads},
          {"checkpoint", g.checkpoint}};
}

GenerationSpeed measure_generation(const std::string& run_dir, std::int64_t new_tokens, std::int64_t prompt_tokens) {
  CheckpointModel ckpt = load_checkpoint_model(run_dir, {}, "ablate");
  models::GPT& model = *ckpt.model;
  model.eval();
  const models::ModelConfig& mc = model.config();
  GenerationSpeed out;
  out.new_tokens = new_tokens;
  out.prompt_tokens = std::clamp<std::int64_t>(prompt_tokens, 1, mc.block_size);
  out.threads = num_threads();
  out.checkpoint = fs::path(ckpt.model_path).parent_path().filename().string();
  std::vector<std::int32_t> prompt;
  for (std::int64_t i = 0; i < out.prompt_tokens; ++i) prompt.push_back(static_cast<std::int32_t>(i % mc.vocab_size));
  models::SamplingOptions greedy;
  greedy.temperature = 0;
  models::generate(model, prompt, new_tokens, greedy);  // allocator, caches and threads warm up
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
    models::generate(model, prompt, new_tokens, greedy);
    times.push_back(std::chrono::duration<double>(clock::now() - start).count());
    spent += times.back();
  }
  const double middle = median(times);
  out.repeats = static_cast<std::int64_t>(times.size());
  out.tokens_per_s = middle > 0 ? static_cast<double>(new_tokens) / middle : 0.0;
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
