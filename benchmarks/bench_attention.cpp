// Fused gated attention (ops::flash_attention) vs the composed attention that materialises the
// T×T scores (ops/composed_attention.h), forward + backward, with peak tensor memory. Default shape is the
// issue's B=4, H=4, T=256, d=32. Run: ./build/benchmarks/gattn_bench_attention
#include <benchmark/benchmark.h>

#include "framework/runtime/threads.h"
#include "framework/tensor/random.h"
#include "ops/attention.h"
#include "ops/reduce.h"
#include "ops/elementwise.h"
#include "ops/composed_attention.h"

namespace {

using gattn::Tensor;

enum Kind { kNone, kScore, kForget, kPair };
const char* kind_name(int k) {
  switch (k) {
    case kNone: return "none";
    case kScore: return "score";
    case kForget: return "forget";
    default: return "pair";
  }
}

Tensor randn(const gattn::Shape& s, std::uint64_t seed, double std = 1.0) {
  Tensor t = Tensor::empty(s);
  gattn::Generator g(seed);
  g.normal_(t, 0.0, std);
  return t;
}

struct Inputs {
  Tensor q, k, v, g;
  gattn::ops::AttentionGateTerms gate;
};

Inputs make_inputs(int kind, std::int64_t B, std::int64_t H, std::int64_t T, std::int64_t d) {
  Inputs in;
  in.q = randn({B, H, T, d}, 1).set_requires_grad(true);
  in.k = randn({B, H, T, d}, 2).set_requires_grad(true);
  in.v = randn({B, H, T, d}, 3).set_requires_grad(true);
  in.g = randn({B, H, T, d}, 4);
  if (kind == kScore) in.gate.key_bias = randn({B, H, T}, 5, 0.5).set_requires_grad(true);
  if (kind == kForget) in.gate.forget_cum = randn({B, H, T}, 5, 0.1).set_requires_grad(true);
  if (kind == kPair) {
    in.gate.pair_row = randn({B, H, T}, 5).set_requires_grad(true);
    in.gate.pair_col = randn({B, H, T}, 6).set_requires_grad(true);
    in.gate.pair_alpha = Tensor::full({1}, 0.5).set_requires_grad(true);
  }
  return in;
}

template <class Fn>
void run(benchmark::State& state, Fn&& attention) {
  const int kind = static_cast<int>(state.range(0));
  const std::int64_t B = state.range(1), H = state.range(2), T = state.range(3), d = state.range(4);
  Inputs in = make_inputs(kind, B, H, T, d);
  std::int64_t peak = 0;
  for (auto _ : state) {
    gattn::reset_storage_peak();
    const std::int64_t before = gattn::storage_memory_stats().current_bytes;
    Tensor y = attention(in).out;
    y.backward(in.g);
    peak = std::max(peak, gattn::storage_memory_stats().peak_bytes - before);
  }
  state.SetLabel(kind_name(kind));
  // Causal attention: forward 2·B·H·T²·d (QKᵀ and PV, halved for the mask), backward 2.5× that.
  const double flops = 3.5 * 2.0 * static_cast<double>(B * H * T * T * d);
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
  state.counters["peak_MiB"] = static_cast<double>(peak) / (1024.0 * 1024.0);
}

void BM_FusedAttention(benchmark::State& state) {
  run(state, [](const Inputs& in) { return gattn::ops::flash_attention(in.q, in.k, in.v, in.gate); });
}

void BM_CompositeAttention(benchmark::State& state) {
  run(state, [](const Inputs& in) { return gattn::ops::composed_attention(in.q, in.k, in.v, in.gate); });
}

void shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"kind", "B", "H", "T", "d"});
  for (int kind : {kNone, kScore, kForget, kPair}) b->Args({kind, 4, 4, 256, 32});
  b->Args({kNone, 1, 4, 1024, 64});
  b->Args({kPair, 1, 4, 1024, 64});
  b->Unit(benchmark::kMillisecond);
}

BENCHMARK(BM_FusedAttention)->Apply(shapes);
BENCHMARK(BM_CompositeAttention)->Apply(shapes);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  gattn::set_num_threads(0);
  benchmark::AddCustomContext("threads", std::to_string(gattn::num_threads()));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
