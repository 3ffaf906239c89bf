// Token sampling (temperature, top-k) and the generation loop over the KV cache.
#include "models/sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/tensor/error.h"
#include "framework/data/seq2seq_tokens.h"
#include "models/kv_policy.h"
#include "ops/shape.h"

namespace gattn::models {

namespace {

std::vector<double> last_row(const Tensor& logits) {
  const std::int64_t V = logits.size(-1), n = logits.size(1);
  std::vector<double> row(static_cast<std::size_t>(V));
  const std::int64_t base = (n - 1) * V;  // batch 1: the last position's row
  for (std::int64_t v = 0; v < V; ++v) row[static_cast<std::size_t>(v)] = logits.at(base + v);
  return row;
}

}  // namespace

void validate(const SamplingOptions& options) {
  if (!(options.temperature >= 0) || !std::isfinite(options.temperature))
    throw ValueError("--temperature must be a finite number >= 0, got " + std::to_string(options.temperature));
  if (options.top_k < 0) throw ValueError("--top-k must be >= 0, got " + std::to_string(options.top_k));
}

std::int32_t sample_token(const std::vector<double>& logits, const SamplingOptions& options, Generator& gen) {
  if (logits.empty()) throw ValueError("sample_token: empty logits");
  const auto V = static_cast<std::int64_t>(logits.size());
  const auto argmax = [&] {
    std::int64_t best = 0;
    for (std::int64_t v = 1; v < V; ++v)
      if (logits[static_cast<std::size_t>(v)] > logits[static_cast<std::size_t>(best)]) best = v;
    return static_cast<std::int32_t>(best);
  };
  if (options.temperature == 0) return argmax();
  double threshold = -std::numeric_limits<double>::infinity();
  if (options.top_k > 0 && options.top_k < V) {
    std::vector<double> sorted = logits;
    std::nth_element(sorted.begin(), sorted.begin() + (options.top_k - 1), sorted.end(), std::greater<>());
    threshold = sorted[static_cast<std::size_t>(options.top_k - 1)];
  }
  double m = -std::numeric_limits<double>::infinity();
  for (double z : logits)
    if (z >= threshold) m = std::max(m, z);
  if (!std::isfinite(m)) throw NumericalError("sample: the logits are not finite (max " + std::to_string(m) + ")");
  std::vector<double> p(logits.size(), 0.0);
  double total = 0;
  for (std::size_t v = 0; v < logits.size(); ++v)
    if (logits[v] >= threshold) total += p[v] = std::exp((logits[v] - m) / options.temperature);
  double u = gen.next_uniform() * total;
  std::int32_t last_kept = 0;
  for (std::size_t v = 0; v < p.size(); ++v) {
    if (p[v] == 0) continue;
    last_kept = static_cast<std::int32_t>(v);
    u -= p[v];
    if (u < 0) return last_kept;
  }
  return last_kept;  // u rounded past the end: the last kept token
}

Tensor forward_in_chunks(GPT& model, const Tensor& idx, KVCache& cache, bool last_only) {
  const std::int64_t n = idx.size(1);
  std::vector<Tensor> logits;
  for (std::int64_t done = 0; done < n;) {
    const std::int64_t room = cache.capacity() - cache.length();
    const std::int64_t chunk = std::min(n - done, std::max<std::int64_t>(room, 1));
    Tensor out = model.forward_cached(ops::slice(idx, 1, done, done + chunk), cache);
    done += chunk;
    if (!last_only)
      logits.push_back(out);
    else if (done == n)
      logits.push_back(ops::slice(out, 1, chunk - 1, chunk));
  }
  return logits.size() == 1 ? logits.front() : ops::concat(logits, 1);
}

std::vector<std::int32_t> generate(GPT& model, const std::vector<std::int32_t>& prompt, std::int64_t max_new_tokens,
                                   const SamplingOptions& options, const std::function<void(std::int32_t)>& on_token,
                                   const InferenceOptions& inference, InferenceCounters* counters) {
  validate(options);
  check_inference_options(inference, model);
  if (prompt.empty()) throw ValueError("generate: the prompt must hold at least one token");
  if (max_new_tokens < 0) throw ValueError("--max-new-tokens must be >= 0, got " + std::to_string(max_new_tokens));
  const std::int64_t T = model.config().block_size;
  Generator gen(options.seed, kSamplingStream);
  KVCache cache(model.config(), 1, inference);
  std::vector<std::int32_t> context(
      prompt.end() - std::min<std::ptrdiff_t>(static_cast<std::ptrdiff_t>(prompt.size()), T), prompt.end());
  auto run = [&](const std::vector<std::int32_t>& tokens) {
    return last_row(forward_in_chunks(model, Tensor::from_ints(tokens, {1, static_cast<std::int64_t>(tokens.size())}),
                                      cache, true));
  };
  // Rotary positions (or none) under a KV budget never run out: the cache evicts and generation goes on.
  const bool endless = !model.config().learned_positions() && inference.bounded();
  std::vector<double> logits = run(context);
  std::vector<std::int32_t> out;
  // Reserved up to a million ids: beyond that the vector grows as tokens come (a caller streaming
  // a long generation should not pay for all of it up front).
  out.reserve(static_cast<std::size_t>(std::min<std::int64_t>(max_new_tokens, std::int64_t{1} << 20)));
  for (std::int64_t k = 0; k < max_new_tokens; ++k) {
    const std::int32_t token = sample_token(logits, options, gen);
    out.push_back(token);
    context.push_back(token);
    if (on_token) on_token(token);
    if (k + 1 == max_new_tokens) break;
    if (cache.position() == T && !endless) {
      // The learned positions are used up (or rope's exact cache is full): restart the cache from the
      // newest half of the context.
      const std::int64_t keep = std::max<std::int64_t>(1, T / 2);
      context.erase(context.begin(), context.end() - keep);
      cache.clear();
      logits = run(context);
    } else {
      logits = run({token});
      // Endless generation keeps only what a restart would need of the context.
      if (static_cast<std::int64_t>(context.size()) > 2 * T) context.erase(context.begin(), context.end() - T);
    }
  }
  if (counters) *counters = cache.counters;
  return out;
}

void check_source(const ModelConfig& config, const std::vector<std::int32_t>& source, const std::string& who) {
  const auto S = static_cast<std::int64_t>(source.size());
  if (S == 0 || S > config.block_size)
    throw ValueError(who + ": the source holds " + std::to_string(S) +
                     " tokens; it needs 1 … model.block_size=" + std::to_string(config.block_size));
  // The reserved ids (padding, the decoder's start, the target's end) never occur inside a source.
  for (std::size_t j = 0; j < source.size(); ++j)
    if (source[j] < kSeq2SeqFirstContent)
      throw ValueError(who + ": source token " + std::to_string(j) + " is the " +
                       (source[j] == kSeq2SeqPad     ? "padding"
                        : source[j] == kSeq2SeqStart ? "decoder's start"
                                                     : "target's end") +
                       " id " + std::to_string(source[j]) + ", which a source may not hold (content ids start at " +
                       std::to_string(kSeq2SeqFirstContent) + ")");
}

std::vector<std::int32_t> generate_target(GPT& model, const std::vector<std::int32_t>& source,
                                          std::int64_t max_new_tokens, const SamplingOptions& options,
                                          const std::function<void(std::int32_t)>& on_token) {
  validate(options);
  const ModelConfig& config = model.config();
  if (!config.encoder_decoder())
    throw ValueError("generate_target: model.arch is " + config.arch + "; a source needs an encoder_decoder model");
  check_source(config, source, "generate_target");
  const auto S = static_cast<std::int64_t>(source.size());
  if (max_new_tokens < 0) throw ValueError("--max-new-tokens must be >= 0, got " + std::to_string(max_new_tokens));
  Generator gen(options.seed, kSamplingStream);
  KVCache cache(config, 1);
  model.encode_source(Tensor::from_ints(source, {1, S}), cache);
  std::vector<std::int32_t> out;
  std::int32_t next = kSeq2SeqStart;
  // The decoder's inputs are the start token and the tokens so far: block_size of them at most.
  const std::int64_t limit = std::min(max_new_tokens, config.block_size);
  for (std::int64_t k = 0; k < limit; ++k) {
    const std::vector<double> logits = last_row(model.forward_cached(Tensor::from_ints({next}, {1, 1}), cache));
    next = sample_token(logits, options, gen);
    if (next == kSeq2SeqEnd) break;
    out.push_back(next);
    if (on_token) on_token(next);
  }
  return out;
}

}  // namespace gattn::models
