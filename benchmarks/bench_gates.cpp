// A block's attention with its gates, forward + backward (GatedAttention::attend: the gates' own
// products, the fused attention or the expert mixture, the output gating), on the CPU. The routed
// cases use E experts that all see the full causal span, so each is one full attention: top-1 of E
// should cost about one attention (each expert computes only the query rows routed to it), top-E
// about E of them. Run: build/benchmarks/gattn_bench_gates (OMP_NUM_THREADS as for training).
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "core/tensor/random.h"
#include "models/attention.h"
#include "ops/reduce.h"

namespace {

using gattn::Tensor;

constexpr std::int64_t kB = 4, kH = 4, kT = 256, kD = 32;

struct Case {
  std::string name;
  std::string kind;
  std::int64_t experts = 0, top_k = 1;  // routed only
};

void BM_BlockAttention(benchmark::State& state, const Case& c) {
  gattn::models::ModelConfig model;
  model.block_size = kT;
  model.n_layer = 1;
  model.n_head = kH;
  model.n_embd = kH * kD;
  model.vocab_size = 1;
  model.gate.kind = c.kind;
  if (c.kind == "routed") {
    model.gate.options["windows"] = std::vector<std::int64_t>(static_cast<std::size_t>(c.experts), 0);
    model.gate.options["top_k"] = c.top_k;
  }
  gattn::Generator gen(1);
  auto block = std::make_shared<gattn::models::GatedAttention>(model, 0, gen);
  // A router whose logits differ by O(1): tokens spread over the experts as after some training.
  for (auto& [name, p] : block->named_parameters())
    if (name.rfind("router.weight", 0) == 0) gen.normal_(p, 0.0, 1.0);
  auto randn = [&](const gattn::Shape& s) {
    Tensor t = Tensor::empty(s);
    gen.normal_(t);
    return t.set_requires_grad(true);
  };
  gattn::models::AttentionInputs in{randn({kB, kT, kH * kD}), randn({kB, kH, kT, kD}), randn({kB, kH, kT, kD}),
                                    randn({kB, kH, kT, kD})};
  for (auto _ : state) {
    gattn::models::AttentionContext ctx;
    ctx.training = true;
    Tensor y = block->attend(in, ctx);
    gattn::ops::sum(y).backward();
    benchmark::DoNotOptimize(in.q.grad());
  }
  state.SetLabel(c.kind == "routed" ? "E=" + std::to_string(c.experts) + " top_k=" + std::to_string(c.top_k) : c.kind);
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<Case> cases = {
      {"none", "none"},
      {"routed_E2_top1", "routed", 2, 1},
      {"routed_E4_top1", "routed", 4, 1},
      {"routed_E2_top2", "routed", 2, 2},
      {"routed_E4_top4", "routed", 4, 4},
  };
  for (const Case& c : cases)
    benchmark::RegisterBenchmark(("BM_BlockAttention/" + c.name).c_str(), BM_BlockAttention, c)
        ->Unit(benchmark::kMillisecond);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
