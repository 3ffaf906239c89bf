// CPU op throughput on the shapes of a small GPT (the quick-start scale: 8×256 tokens, C = 384,
// 6 heads, char vocabulary). GEMMs report GFLOP/s, memory-bound ops GB/s (bytes read + written
// once). Run: ./build/benchmarks/gattn_bench_ops [--benchmark_filter=Linear]
#include <benchmark/benchmark.h>

#include "core/autograd/grad_mode.h"
#include "core/tensor/random.h"
#include "framework/runtime/library_environment.h"
#include "framework/runtime/openblas_core.h"
#include "framework/runtime/threads.h"
#include "ops/cpu/tile_gemm.h"
#include "ops/elementwise.h"
#include "ops/glu.h"
#include "ops/matmul.h"
#include "ops/nn_functional.h"
#include "ops/reduce.h"
#include "ops/unary.h"

namespace {

using gattn::Tensor;

constexpr std::int64_t kTokens = 8 * 256;  // batch × block
constexpr std::int64_t kC = 384;
constexpr std::int64_t kHeads = 6;
constexpr std::int64_t kT = 256;
constexpr std::int64_t kVocab = 65;

Tensor randn(const gattn::Shape& s, std::uint64_t seed) {
  Tensor t = Tensor::empty(s);
  gattn::Generator g(seed);
  g.normal_(t, 0.0, 1.0);
  return t;
}

void set_gflops(benchmark::State& state, double flops_per_iter) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops_per_iter * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

void set_gbytes(benchmark::State& state, double bytes_per_iter) {
  state.counters["GB/s"] =
      benchmark::Counter(bytes_per_iter * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

// Linear forward: [tokens, in] × [out, in]ᵀ. Args: in, out.
void BM_LinearForward(benchmark::State& state) {
  gattn::NoGradGuard no_grad;
  std::int64_t in = state.range(0), out = state.range(1);
  Tensor x = randn({kTokens, in}, 1), w = randn({out, in}, 2), b = randn({out}, 3);
  for (auto _ : state) benchmark::DoNotOptimize(gattn::ops::linear(x, w, b));
  set_gflops(state, 2.0 * kTokens * in * out);
}
BENCHMARK(BM_LinearForward)
    ->ArgNames({"in", "out"})
    ->Args({kC, 3 * kC})  // attn.qkv
    ->Args({kC, kC})      // attn.proj
    ->Args({kC, 4 * kC})  // mlp.fc
    ->Args({4 * kC, kC})  // mlp.proj
    ->Args({kC, kVocab})  // tied lm head
    ->Unit(benchmark::kMillisecond);

// Linear forward + backward (dx, dW, db): 3 GEMMs.
void BM_LinearForwardBackward(benchmark::State& state) {
  std::int64_t in = state.range(0), out = state.range(1);
  Tensor x = randn({kTokens, in}, 1).set_requires_grad(true);
  Tensor w = randn({out, in}, 2).set_requires_grad(true);
  Tensor b = randn({out}, 3).set_requires_grad(true);
  Tensor g = randn({kTokens, out}, 4);
  for (auto _ : state) {
    Tensor y = gattn::ops::linear(x, w, b);
    y.backward(g);
  }
  set_gflops(state, 3 * 2.0 * kTokens * in * out);
}
BENCHMARK(BM_LinearForwardBackward)
    ->ArgNames({"in", "out"})
    ->Args({kC, 4 * kC})
    ->Args({4 * kC, kC})
    ->Unit(benchmark::kMillisecond);

// Attention scores per head batch: [B·H, T, d] × [B·H, T, d]ᵀ (the unfused path's GEMM).
void BM_BatchedScores(benchmark::State& state) {
  gattn::NoGradGuard no_grad;
  std::int64_t d = kC / kHeads, bh = (kTokens / kT) * kHeads;
  Tensor q = randn({bh, kT, d}, 1), k = randn({bh, kT, d}, 2);
  for (auto _ : state) benchmark::DoNotOptimize(gattn::ops::matmul(q, k, false, true));
  set_gflops(state, 2.0 * bh * kT * kT * d);
}
BENCHMARK(BM_BatchedScores)->Unit(benchmark::kMillisecond);

void BM_LayerNormForward(benchmark::State& state) {
  gattn::NoGradGuard no_grad;
  Tensor x = randn({kTokens, kC}, 1), w = randn({kC}, 2), b = randn({kC}, 3);
  for (auto _ : state) benchmark::DoNotOptimize(gattn::ops::layer_norm(x, w, b));
  set_gbytes(state, 2.0 * 4 * kTokens * kC);
}
BENCHMARK(BM_LayerNormForward)->Unit(benchmark::kMicrosecond);

void BM_LayerNormForwardBackward(benchmark::State& state) {
  Tensor x = randn({kTokens, kC}, 1).set_requires_grad(true);
  Tensor w = randn({kC}, 2).set_requires_grad(true), b = randn({kC}, 3).set_requires_grad(true);
  Tensor g = randn({kTokens, kC}, 4);
  for (auto _ : state) gattn::ops::layer_norm(x, w, b).backward(g);
  set_gbytes(state, 5.0 * 4 * kTokens * kC);  // fwd: x in, y out; bwd: x, g in, dx out
}
BENCHMARK(BM_LayerNormForwardBackward)->Unit(benchmark::kMicrosecond);

// Softmax over attention rows: [B·H·T, T].
void BM_SoftmaxForward(benchmark::State& state) {
  gattn::NoGradGuard no_grad;
  std::int64_t rows = (kTokens / kT) * kHeads * kT;
  Tensor x = randn({rows, kT}, 1);
  for (auto _ : state) benchmark::DoNotOptimize(gattn::ops::softmax(x));
  set_gbytes(state, 2.0 * 4 * rows * kT);
}
BENCHMARK(BM_SoftmaxForward)->Unit(benchmark::kMicrosecond);

void BM_GeluForward(benchmark::State& state) {
  gattn::NoGradGuard no_grad;
  Tensor x = randn({kTokens, 4 * kC}, 1);
  for (auto _ : state) benchmark::DoNotOptimize(gattn::ops::gelu(x));
  set_gbytes(state, 2.0 * 4 * kTokens * 4 * kC);
}
BENCHMARK(BM_GeluForward)->Unit(benchmark::kMicrosecond);

// The output gate y ⊙ σ(u), forward + backward, [tokens, C]: Arg 0 the composed σ then ⊙ (two ops
// each way), 1 the fused glu_sigmoid (one), with the same bits (models/gates/output.cpp).
void BM_OutputGateForwardBackward(benchmark::State& state) {
  const bool fused = state.range(0) != 0;
  Tensor u = randn({kTokens, kC}, 1).set_requires_grad(true), y = randn({kTokens, kC}, 2).set_requires_grad(true);
  Tensor g = randn({kTokens, kC}, 3);
  for (auto _ : state) {
    Tensor out = fused ? gattn::ops::glu_sigmoid(u, y) : y * gattn::ops::sigmoid(u);
    out.backward(g);
  }
  set_gbytes(state, 8.0 * 4 * kTokens * kC);  // fwd: u, y in, out; bwd: u, y, g in, du, dy out
}
BENCHMARK(BM_OutputGateForwardBackward)->ArgName("fused")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

// One of the fused attention's tile products, 64 × 64 × 64 on hot operands, one thread's call.
// Args: library (0 OpenBLAS's cblas_sgemm through cpu::blas_gemm, 1 cpu::tile_gemm) and product
// (0 S = q·kᵀ with k as stored, so B transposed; 1 acc += W·V; 2 dv += Aᵀ·dO).
void BM_AttentionTileProduct(benchmark::State& state) {
  const bool ours = state.range(0) != 0;
  const int product = static_cast<int>(state.range(1));
  constexpr std::int64_t n = 64;
  const Tensor a = randn({n, n}, 1), b = randn({n, n}, 2);
  Tensor c = randn({n, n}, 3);
  const gattn::cpu::GemmArgs<float> g{.trans_a = product == 2,
                                      .trans_b = product == 0,
                                      .M = n,
                                      .N = n,
                                      .K = n,
                                      .A = a.data<float>(),
                                      .lda = n,
                                      .B = b.data<float>(),
                                      .ldb = n,
                                      .beta = product == 0 ? 0.0f : 1.0f,
                                      .C = c.data<float>(),
                                      .ldc = n};
  for (auto _ : state) {
    if (ours)
      gattn::cpu::tile_gemm<float>(g);
    else
      gattn::cpu::blas_gemm<float>(g);
    benchmark::ClobberMemory();
  }
  set_gflops(state, 2.0 * n * n * n);
}
BENCHMARK(BM_AttentionTileProduct)
    ->ArgNames({"ours", "product"})
    ->ArgsProduct({{0, 1}, {0, 1, 2}})
    ->Unit(benchmark::kMicrosecond);

// Fused cross-entropy from logits, forward + backward. Arg: vocabulary size.
void BM_CrossEntropyForwardBackward(benchmark::State& state) {
  std::int64_t v = state.range(0);
  Tensor logits = randn({kTokens, v}, 1).set_requires_grad(true);
  Tensor targets = Tensor::empty({kTokens}, gattn::DType::i32);
  gattn::Generator gen(5);
  gen.randint_(targets, v);
  for (auto _ : state) gattn::ops::cross_entropy(logits, targets).backward();
  set_gbytes(state, 3.0 * 4 * kTokens * v);
}
BENCHMARK(BM_CrossEntropyForwardBackward)->ArgName("vocab")->Arg(kVocab)->Arg(50304)->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  gattn::set_num_threads(0);  // all cores, as training uses by default
  benchmark::AddCustomContext("threads", std::to_string(gattn::num_threads()));
  // What the libraries run with (library_environment_first.cpp sets both as gattn does).
  benchmark::AddCustomContext("blas core", gattn::openblas_core());
  benchmark::AddCustomContext("openmp wait", gattn::openmp_wait_policy());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
