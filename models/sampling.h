// Autoregressive generation with the KV cache: temperature, top-k and a seeded Philox stream, so
// the same checkpoint, prompt and seed give the same tokens on every run and thread count.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "core/tensor/random.h"
#include "models/gpt.h"
#include "models/inference_options.h"
#include "models/kv_cache.h"

namespace gattn::models {

// The Philox stream id of sampling draws (Generator(options.seed, kSamplingStream)); training's
// streams are 0 … 2.
constexpr std::uint64_t kSamplingStream = 7;

struct SamplingOptions {
  double temperature = 1.0;  // logits are divided by it; 0 = greedy (argmax)
  std::int64_t top_k = 0;    // keep the k most likely tokens (ties at the k-th kept too); 0 = all
  std::uint64_t seed = 0;    // the sampling stream's Philox seed
};

// Throws ValueError naming the option for a negative temperature or top_k.
void validate(const SamplingOptions& options);

// Picks the next token from one row of logits (any V): argmax for temperature 0 (lowest id on
// ties), else a draw from softmax(logits / temperature) restricted to the top_k, using one uniform
// of `gen`.
std::int32_t sample_token(const std::vector<double>& logits, const SamplingOptions& options, Generator& gen);

// Runs idx i32 [B, n] through `cache` in chunks that fit: as many positions as the cache has free
// rows, one at a time once it is full (each evicting what the policy chooses), so a budget smaller
// than n works. Returns the logits [B, n, V]; `last_only` keeps only the last position's [B, 1, V].
// Under the exact options the logits equal one forward_cached call's.
Tensor forward_in_chunks(GPT& model, const Tensor& idx, KVCache& cache, bool last_only = false);

// Generates `max_new_tokens` tokens after `prompt` (non-empty). A prompt longer than
// model.block_size keeps its last block_size tokens. Once the context reaches the block (learned
// positions end at block_size; the exact cache holds block_size), the cache restarts from the last
// block_size/2 tokens, so the cost stays linear per token; within one block, with the exact options,
// the result equals re-running forward() on the whole context at every step. Under a KV budget the
// cache holds at most the budget per head, and a rope model never restarts: positions go on past
// block_size at a constant cost per token (`inference`: what the generation may leave out, checked against the model by
// check_inference_options; the default is exact). `on_token` (optional) sees each new token as it is
// drawn. `counters` (optional) receives what the generation evicted and skipped.
std::vector<std::int32_t> generate(GPT& model, const std::vector<std::int32_t>& prompt, std::int64_t max_new_tokens,
                                   const SamplingOptions& options,
                                   const std::function<void(std::int32_t)>& on_token = {},
                                   const InferenceOptions& inference = {}, InferenceCounters* counters = nullptr);

// Throws ValueError, its message starting with `who`, unless `source` can be an encoder–decoder
// model's source: 1 … model.block_size ids, none of them the padding id kSeq2SeqPad.
void check_source(const ModelConfig& config, const std::vector<std::int32_t>& source, const std::string& who);

// Encoder–decoder generation: the target for `source` (checked by check_source). The encoder
// runs once and each decoder block's cross-attention memory is kept (GPT::encode_source); the decoder
// starts from kSeq2SeqStart and adds one token per step with the KV cache, until it draws kSeq2SeqEnd
// (left out of the result), or after max_new_tokens, or when the target fills model.block_size.
// Greedy with temperature 0; equal to re-running forward() on the whole target at every step.
// `on_token` sees each token kept.
std::vector<std::int32_t> generate_target(GPT& model, const std::vector<std::int32_t>& source,
                                          std::int64_t max_new_tokens, const SamplingOptions& options,
                                          const std::function<void(std::int32_t)>& on_token = {});

}  // namespace gattn::models
