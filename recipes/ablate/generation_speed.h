// The generation throughput of a trained run for `gattn ablate`'s summary: KV-cached generation
// (models::generate, the path of `gattn sample`; models::generate_target for an encoder–decoder)
// from the run's latest checkpoint on a fixed small workload, timed by the wall clock of the machine
// that runs it. The result is kept beside the run
// in generation.json, so the summaries of later invocations read it instead of measuring again.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace gattn::recipes {

// The file in a run directory that holds the measurement.
inline constexpr const char* kGenerationFile = "generation.json";

struct GenerationSpeed {
  double tokens_per_s = 0;         // new tokens per second, prompt prefill included in the time
  std::int64_t batch = 1;          // sequences generated at once
  std::int64_t prompt_tokens = 0;  // the prompt: token ids 0, 1, … (mod the vocabulary), at most the block
                                   // (encoder–decoder: 0, the decoder starts from its start token)
  std::int64_t new_tokens = 0;     // tokens generated per timed run (greedy; encoder–decoder: the
                                   // target's tokens, its end token included when drawn)
  std::int64_t source_tokens = 0;  // encoder–decoder: the source's length (its encoding is timed too); 0 else
  std::int64_t repeats = 0;        // timed runs; tokens_per_s is from their median time
  int threads = 0;                 // CPU threads (the run's train.threads)
  std::string checkpoint;          // the checkpoint directory's name (step_<8 digits>)
};

nlohmann::json to_json(const GenerationSpeed& g);

// Loads the run's latest checkpoint (its config sets the thread count, as for `gattn sample`), warms
// the model up with one generation, then times generations of `new_tokens` tokens from a
// `prompt_tokens`-token prompt (batch 1, eval-mode math, greedy): at least 5 and until 0.4 s have
// been spent (at most 200); tokens_per_s is from their median. An encoder–decoder generates the
// target of the first val example's source instead (models::generate_target: the encoder once, then
// at most `new_tokens` decoder steps, stopping at the end token, which counts as a token drawn); a
// source of content ids 3, 4, … (`prompt_tokens` of them) stands in when the run's data cannot be
// read from here. Throws what loading the checkpoint throws.
GenerationSpeed measure_generation(const std::string& run_dir, std::int64_t new_tokens = 64,
                                   std::int64_t prompt_tokens = 8);

// Writes run_dir/generation.json (atomically).
void write_generation(const std::string& run_dir, const GenerationSpeed& speed);

// The tokens/s of run_dir/generation.json when the file exists, reads well and was measured on the
// checkpoint that checkpoints/latest names now; nullopt otherwise (a stale or damaged file only costs
// the column).
std::optional<double> read_generation_tokens_per_s(const std::string& run_dir);

}  // namespace gattn::recipes
