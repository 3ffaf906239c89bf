// Fused attention (ops::flash_attention) vs the composed attention that materialises the T×T scores
// (ops/attention/composed_attention.h), forward + backward, with peak tensor memory, for each kind of term the
// op takes (none; a column bias; a row and a column bias, as a prefix-sum gate gives; the pairwise
// modulation); and the fused op with a share of the query rows skipped (active_queries), whose
// cost should follow the active rows. Default shape is B=4, H=4, T=256, d=32.
// Run: ./build/benchmarks/gattn_bench_attention
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "core/tensor/random.h"
#include "framework/runtime/library_environment.h"
#include "framework/runtime/openblas_core.h"
#include "framework/runtime/threads.h"
#include "ops/attention/attention.h"
#include "ops/attention/composed_attention.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"

namespace {

using gattn::Tensor;

enum Terms { kNone, kColBias, kRowColBias, kModulation };
const char* terms_name(int k) {
  switch (k) {
    case kNone:
      return "no terms";
    case kColBias:
      return "col_bias";
    case kRowColBias:
      return "row_bias+col_bias";
    default:
      return "modulation";
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
  gattn::ops::AttentionTerms terms;
};

Inputs make_inputs(int kind, std::int64_t B, std::int64_t H, std::int64_t T, std::int64_t d) {
  Inputs in;
  in.q = randn({B, H, T, d}, 1).set_requires_grad(true);
  in.k = randn({B, H, T, d}, 2).set_requires_grad(true);
  in.v = randn({B, H, T, d}, 3).set_requires_grad(true);
  in.g = randn({B, H, T, d}, 4);
  // A column bias; a prefix sum c as row_bias = c, col_bias = −c; the modulation.
  if (kind == kColBias) in.terms.col_bias = randn({B, H, T}, 5, 0.5).set_requires_grad(true);
  if (kind == kRowColBias) {
    in.terms.row_bias = randn({B, H, T}, 5, 0.1).set_requires_grad(true);
    in.terms.col_bias = gattn::ops::neg(in.terms.row_bias.detach()).set_requires_grad(true);
  }
  if (kind == kModulation) {
    in.terms.modulation_row = randn({B, H, T}, 5).set_requires_grad(true);
    in.terms.modulation_col = randn({B, H, T}, 6).set_requires_grad(true);
    in.terms.modulation_alpha = Tensor::full({1}, 0.5).set_requires_grad(true);
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
  state.SetLabel(terms_name(kind));
  // Causal attention: forward 2·B·H·T²·d (QKᵀ and PV, halved for the mask), backward 2.5× that.
  const double flops = 3.5 * 2.0 * static_cast<double>(B * H * T * T * d);
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
  state.counters["peak_MiB"] = static_cast<double>(peak) / (1024.0 * 1024.0);
}

void BM_FusedAttention(benchmark::State& state) {
  run(state, [](const Inputs& in) { return gattn::ops::flash_attention(in.q, in.k, in.v, in.terms); });
}

void BM_CompositeAttention(benchmark::State& state) {
  run(state, [](const Inputs& in) { return gattn::ops::composed_attention(in.q, in.k, in.v, in.terms); });
}

// Forward + backward of the fused op (no terms) with 1/n of the query rows active, n = range(0),
// picked at random with a fixed seed: the time should scale with the active share.
void BM_FusedAttentionActiveRows(benchmark::State& state) {
  const std::int64_t n = state.range(0), B = state.range(1), H = state.range(2), T = state.range(3), d = state.range(4);
  Inputs in = make_inputs(kNone, B, H, T, d);
  std::vector<std::int32_t> active(static_cast<std::size_t>(B * T), 0);
  gattn::Generator gen(7);
  Tensor u = Tensor::empty({B * T});
  gen.uniform_(u, 0.0, 1.0);
  const std::vector<double> uv = u.to_vector();
  std::int64_t rows = 0;
  for (std::size_t i = 0; i < active.size(); ++i) {
    active[i] = uv[i] * static_cast<double>(n) < 1.0;
    rows += active[i];
  }
  gattn::ops::AttentionOptions options;
  options.active_queries = Tensor::from_ints(active, {B, T});
  for (auto _ : state) {
    Tensor y = gattn::ops::flash_attention(in.q, in.k, in.v, {}, options).out;
    y.backward(in.g);
  }
  state.SetLabel("active 1/" + std::to_string(n) + " (" + std::to_string(rows) + " of " + std::to_string(B * T) +
                 " rows)");
  // The causal cost of the active rows: row i does 2·(i + 1)·d multiply-adds forward, 2.5× that back.
  double work = 0;
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t i = 0; i < T; ++i)
      if (active[static_cast<std::size_t>(b * T + i)]) work += static_cast<double>(i + 1);
  const double flops = 3.5 * 4.0 * static_cast<double>(H * d) * work;
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

void shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"terms", "B", "H", "T", "d"});
  for (int kind : {kNone, kColBias, kRowColBias, kModulation}) b->Args({kind, 4, 4, 256, 32});
  b->Args({kNone, 1, 4, 1024, 64});
  b->Args({kNone, 12, 4, 64, 32});  // the shakespeare_char training shape (T = 64)
  b->Args({kModulation, 1, 4, 1024, 64});
  b->Unit(benchmark::kMillisecond);
}

BENCHMARK(BM_FusedAttention)->Apply(shapes);
BENCHMARK(BM_CompositeAttention)->Apply(shapes);
BENCHMARK(BM_FusedAttentionActiveRows)
    ->ArgNames({"one_in", "B", "H", "T", "d"})
    ->Args({1, 4, 4, 256, 32})
    ->Args({2, 4, 4, 256, 32})
    ->Args({4, 4, 4, 256, 32})
    ->Args({1, 1, 4, 1024, 64})
    ->Args({4, 1, 4, 1024, 64})
    ->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  gattn::set_num_threads(0);
  benchmark::AddCustomContext("threads", std::to_string(gattn::num_threads()));
  // What the libraries run with (library_environment_first.cpp sets both as gattn does).
  benchmark::AddCustomContext("blas core", gattn::openblas_core());
  benchmark::AddCustomContext("openmp wait", gattn::openmp_wait_policy());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
