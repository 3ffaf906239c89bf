// CUDA op throughput on GPT-2 124M shapes (B·T = 8·1024 tokens, C = 768, 12 heads, V = 50257):
// the cuBLAS GEMMs of a block (TF32 and bf16) report TFLOP/s, the hand-written kernels GB/s (bytes
// read + written once). Each iteration waits for the GPU, so the times are device times plus one
// launch. Without a device every benchmark reports "no CUDA device".
// Run: ./build/benchmarks/gattn_bench_cuda_ops [--benchmark_filter=Gemm]
#include <benchmark/benchmark.h>

#include "core/autograd/grad_mode.h"
#include "core/cuda/device.h"
#include "core/tensor/random.h"
#include "ops/autocast.h"
#include "ops/matmul.h"
#include "ops/nn_functional.h"
#include "ops/unary.h"
#ifdef GATTN_WITH_CUDA
#include "core/cuda/stream.h"
#include "ops/cuda/gemm.h"
#endif

namespace {

using gattn::Device;
using gattn::DType;
using gattn::Tensor;

constexpr std::int64_t kTokens = 8 * 1024;
constexpr std::int64_t kC = 768;
constexpr std::int64_t kT = 1024;
constexpr std::int64_t kHeads = 12;
constexpr std::int64_t kVocab = 50257;

bool skip_without_device(benchmark::State& state) {
  if (gattn::cuda::available()) return false;
  state.SkipWithError("no CUDA device");
  return true;
}

void sync() {
#ifdef GATTN_WITH_CUDA
  gattn::cuda::compute_stream().synchronize();
#endif
}

Tensor randn_on_gpu(const gattn::Shape& s, std::uint64_t seed, DType dtype = DType::f32) {
  Tensor t = Tensor::empty(s);
  gattn::Generator g(seed);
  g.normal_(t, 0.0, 1.0);
  return t.to(dtype).to(Device::cuda);
}

void set_rate(benchmark::State& state, const char* name, double per_iter) {
  state.counters[name] =
      benchmark::Counter(per_iter * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

// The MLP's first GEMM: [tokens, C] × [4C, C]ᵀ. Arg 0: f32 with TF32, 1: f32 exact, 2: bf16.
void BM_Gemm(benchmark::State& state) {
  if (skip_without_device(state)) return;
  gattn::NoGradGuard no_grad;
  const int mode = static_cast<int>(state.range(0));
#ifdef GATTN_WITH_CUDA
  const bool tf32 = gattn::cuda::tf32_enabled();
  gattn::cuda::set_tf32_enabled(mode == 0);
#endif
  const DType dt = mode == 2 ? DType::bf16 : DType::f32;
  const Tensor x = randn_on_gpu({kTokens, kC}, 1, dt), w = randn_on_gpu({4 * kC, kC}, 2, dt);
  for (auto _ : state) {
    benchmark::DoNotOptimize(gattn::ops::matmul(x, w, false, true));
    sync();
  }
#ifdef GATTN_WITH_CUDA
  gattn::cuda::set_tf32_enabled(tf32);
#endif
  set_rate(state, "TFLOP/s", 2.0 * kTokens * kC * 4 * kC / 1e12);
  state.SetLabel(mode == 0 ? "f32 TF32" : mode == 1 ? "f32 exact" : "bf16");
}
BENCHMARK(BM_Gemm)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();

// The MLP's first layer as training runs it: linear_gelu forward + backward (three GEMMs; forward
// with bias and GELU in cuBLASLt's epilogue). Arg 0: fp32 (TF32); 1: bf16 mixed precision
// (ops::AutocastScope: operands cast to bf16 each call, f32 results).
void BM_LinearGeluTraining(benchmark::State& state) {
  if (skip_without_device(state)) return;
  const bool mixed = state.range(0) == 1;
  Tensor x = randn_on_gpu({kTokens, kC}, 4).set_requires_grad(true);
  Tensor w = randn_on_gpu({4 * kC, kC}, 5).set_requires_grad(true),
         b = randn_on_gpu({4 * kC}, 6).set_requires_grad(true);
  const Tensor g = randn_on_gpu({kTokens, 4 * kC}, 7);
  for (auto _ : state) {
    gattn::ops::AutocastScope scope(mixed ? gattn::ops::ComputePrecision::bf16 : gattn::ops::ComputePrecision::fp32);
    gattn::ops::linear_gelu(x, w, b).backward(g);
    sync();
  }
  set_rate(state, "TFLOP/s", 3 * 2.0 * kTokens * kC * 4 * kC / 1e12);
  state.SetLabel(mixed ? "bf16 mixed" : "fp32 TF32");
}
BENCHMARK(BM_LinearGeluTraining)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_LayerNormForwardBackward(benchmark::State& state) {
  if (skip_without_device(state)) return;
  Tensor x = randn_on_gpu({kTokens, kC}, 3).set_requires_grad(true);
  Tensor w = Tensor::ones({kC}, DType::f32, Device::cuda).set_requires_grad(true);
  Tensor b = Tensor::zeros({kC}, DType::f32, Device::cuda).set_requires_grad(true);
  const Tensor g = randn_on_gpu({kTokens, kC}, 4);
  for (auto _ : state) {
    gattn::ops::layer_norm(x, w, b).backward(g);
    sync();
  }
  set_rate(state, "GB/s", 5.0 * kTokens * kC * 4 / 1e9);  // x, y forward; x, g, dx backward
}
BENCHMARK(BM_LayerNormForwardBackward)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_AttentionSoftmax(benchmark::State& state) {
  if (skip_without_device(state)) return;
  gattn::NoGradGuard no_grad;
  const Tensor s = randn_on_gpu({kTokens / kT * kHeads, kT, kT}, 5);
  for (auto _ : state) {
    benchmark::DoNotOptimize(gattn::ops::softmax(s));
    sync();
  }
  set_rate(state, "GB/s", 2.0 * static_cast<double>(s.numel()) * 4 / 1e9);
}
BENCHMARK(BM_AttentionSoftmax)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_CrossEntropyForwardBackward(benchmark::State& state) {
  if (skip_without_device(state)) return;
  Tensor logits = randn_on_gpu({kTokens, kVocab}, 6).set_requires_grad(true);
  Tensor targets = Tensor::empty({kTokens}, DType::i32);
  gattn::Generator(7).randint_(targets, kVocab);
  targets = targets.to(Device::cuda);
  for (auto _ : state) {
    gattn::ops::cross_entropy(logits, targets).backward();
    logits.zero_grad();
    sync();
  }
  set_rate(state, "GB/s", 3.0 * kTokens * kVocab * 4 / 1e9);  // logits twice, dlogits once
}
BENCHMARK(BM_CrossEntropyForwardBackward)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_EmbeddingBackward(benchmark::State& state) {
  if (skip_without_device(state)) return;
  Tensor wte = randn_on_gpu({kVocab, kC}, 8).set_requires_grad(true);
  Tensor idx = Tensor::empty({kTokens}, DType::i32);
  gattn::Generator(9).randint_(idx, kVocab);
  idx = idx.to(Device::cuda);
  const Tensor g = randn_on_gpu({kTokens, kC}, 10);
  for (auto _ : state) {
    gattn::ops::embedding(wte, idx).backward(g);
    wte.zero_grad();
    sync();
  }
  set_rate(state, "GB/s", (2.0 * kTokens * kC + static_cast<double>(kVocab) * kC) * 4 / 1e9);
}
BENCHMARK(BM_EmbeddingBackward)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Gelu(benchmark::State& state) {
  if (skip_without_device(state)) return;
  gattn::NoGradGuard no_grad;
  const Tensor x = randn_on_gpu({kTokens, 4 * kC}, 11);
  for (auto _ : state) {
    benchmark::DoNotOptimize(gattn::ops::gelu(x));
    sync();
  }
  set_rate(state, "GB/s", 2.0 * static_cast<double>(x.numel()) * 4 / 1e9);
}
BENCHMARK(BM_Gelu)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
