// Generation speed: tokens/s of models::generate (KV cache) against re-running the whole context
// through forward() for every token, on the shakespeare_char model shape (4 layers, 4 heads, 128
// wide, V=65) with a 256-token block, 255 new tokens after a 1-token prompt.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "models/gating/registry.h"
#include "models/sampling.h"

namespace {

constexpr std::int64_t kNewTokens = 255;

// none and every registered kind, with its default options.
std::vector<std::string> kinds() {
  std::vector<std::string> out{gattn::models::kNoGate};
  for (const gattn::models::GateKindSpec* k : gattn::models::gate_kinds()) out.push_back(k->name);
  return out;
}

gattn::models::ModelConfig config(const std::string& kind) {
  gattn::models::ModelConfig c;
  c.vocab_size = 65;
  c.block_size = 256;
  c.n_layer = 4;
  c.n_head = 4;
  c.n_embd = 128;
  c.gate.kind = kind;
  return c;
}

void BM_GenerateCached(benchmark::State& state, const std::string& kind) {
  gattn::models::GPT model(config(kind), 1);
  model.eval();
  gattn::models::SamplingOptions o;
  for (auto _ : state) benchmark::DoNotOptimize(gattn::models::generate(model, {0}, kNewTokens, o));
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(kNewTokens), benchmark::Counter::kIsIterationInvariantRate);
}

// The baseline: forward() over the whole context for every new token (O(T²) per token).
void BM_GenerateUncached(benchmark::State& state, const std::string& kind) {
  gattn::models::GPT model(config(kind), 1);
  model.eval();
  gattn::models::SamplingOptions o;
  gattn::NoGradGuard no_grad;
  for (auto _ : state) {
    gattn::Generator gen(o.seed, gattn::models::kSamplingStream);
    std::vector<std::int32_t> context{0};
    for (std::int64_t k = 0; k < kNewTokens; ++k) {
      gattn::Tensor logits =
          model.forward(gattn::Tensor::from_ints(context, {1, static_cast<std::int64_t>(context.size())})).logits;
      const std::int64_t V = logits.size(-1), last = (logits.size(1) - 1) * V;
      std::vector<double> row(static_cast<std::size_t>(V));
      for (std::int64_t v = 0; v < V; ++v) row[static_cast<std::size_t>(v)] = logits.at(last + v);
      context.push_back(gattn::models::sample_token(row, o, gen));
    }
    benchmark::DoNotOptimize(context);
  }
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(kNewTokens), benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

int main(int argc, char** argv) {
  for (const std::string& kind : kinds()) {
    benchmark::RegisterBenchmark(("BM_GenerateCached/" + kind).c_str(), BM_GenerateCached, kind)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("BM_GenerateUncached/" + kind).c_str(), BM_GenerateUncached, kind)
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
