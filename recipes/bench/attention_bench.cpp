// Each case builds the block attention of a one-block model with the kind's gate (models/ makes it
// from the registry, with the kind's default options) and feeds it random h, q, k, v (k and v with
// the case's key/value heads); gradients flow to q, k, v, h and the gate's parameters, as in
// training.
#include "recipes/bench/attention_bench.h"

#include <algorithm>
#include <new>
#include <vector>

#include "core/cuda/device.h"
#include "core/cuda/device_memory.h"
#include "core/cuda/error.h"
#include "core/tensor/random.h"
#include "models/attention.h"
#include "models/gating/registry.h"
#include "ops/autocast.h"
#include "recipes/bench/bench_clock.h"
#include "recipes/common/median.h"

namespace gattn::recipes {

namespace {

struct Inputs {
  std::shared_ptr<models::GatedAttention> block;
  models::AttentionInputs in;
  Tensor grad_out;
  std::vector<Tensor> leaves;  // everything that receives a gradient
};

// A host f32 tensor moved to the case's dtype and device, as a leaf when it gets a gradient.
Tensor place(const Tensor& host, DType dtype, Device device, bool leaf, std::vector<Tensor>& leaves) {
  Tensor t = host.to(dtype).to(device).clone();  // clone: a fresh leaf even where to() aliased
  if (leaf) {
    t.set_requires_grad(true);
    leaves.push_back(t);
  }
  return t;
}

Tensor normal(const Shape& shape, Generator& gen) {
  Tensor t = Tensor::empty(shape);
  gen.normal_(t);
  return t;
}

Inputs make_inputs(const AttentionBenchCase& c, DType dtype, Device device, std::uint64_t seed) {
  Generator gen(seed);
  Inputs in;
  models::ModelConfig model;
  model.block_size = c.T;
  model.n_layer = 1;
  model.n_head = c.H;
  model.n_embd = c.H * c.d;
  model.vocab_size = 1;
  model.gate.kind = c.kind;
  model.validate();
  in.block = std::make_shared<models::GatedAttention>(model, 0, gen);
  in.block->to_(device);
  for (Tensor& p : in.block->parameters()) in.leaves.push_back(p);
  const Shape q{c.B, c.H, c.T, c.d}, kv{c.B, c.kv(), c.T, c.d};
  in.in.q = place(normal(q, gen), dtype, device, true, in.leaves);
  in.in.k = place(normal(kv, gen), dtype, device, true, in.leaves);
  in.in.v = place(normal(kv, gen), dtype, device, true, in.leaves);
  in.in.h = place(normal({c.B, c.T, c.H * c.d}, gen), dtype, device, true, in.leaves);
  in.grad_out = place(normal({c.B, c.T, c.H * c.d}, gen), dtype, device, false, in.leaves);
  return in;
}

Tensor forward(const Inputs& in) {
  models::AttentionContext ctx;
  ctx.training = true;
  return in.block->attend(in.in, ctx);
}

// Warm-up, then the timed iterations: forward between marks 0 and 1, backward between 1 and 2.
void measure(const AttentionBenchCase& c, const AttentionBenchSettings& s, DType dtype, AttentionBenchResult& r) {
  Inputs in = make_inputs(c, dtype, s.device, s.seed);
  BenchClock clock(s.device, 3);
  std::vector<double> fwd, bwd;
  for (int it = 0; it < s.warmup + s.iters; ++it) {
    for (Tensor& t : in.leaves) t.zero_grad();  // so each backward writes, not accumulates, its gradients
    clock.synchronize();
    clock.mark(0);
    Tensor out = forward(in);
    clock.mark(1);
    out.backward(in.grad_out);
    clock.mark(2);
    const double f = clock.elapsed_ms(0, 1), b = clock.elapsed_ms(1, 2);
    if (it >= s.warmup) {
      fwd.push_back(f);
      bwd.push_back(b);
    }
  }
  r.fwd_ms = median(fwd);
  r.bwd_ms = median(bwd);
}

}  // namespace

std::vector<std::string> bench_kinds() {
  std::vector<std::string> out{models::kNoGate};
  for (const models::GateKindSpec* k : models::gate_kinds()) out.push_back(k->name);
  return out;
}

bool is_bench_kind(const std::string& kind) {
  const std::vector<std::string> kinds = bench_kinds();
  return std::find(kinds.begin(), kinds.end(), kind) != kinds.end();
}

double attention_forward_flops(const AttentionBenchCase& c) {
  return 4.0 * static_cast<double>(c.B * c.H) * static_cast<double>(c.T) * static_cast<double>(c.T) *
         static_cast<double>(c.d) / 2.0;
}

AttentionBenchResult run_attention_bench(const AttentionBenchCase& c, AttentionBenchSettings& s) {
  AttentionBenchResult r;
  r.shape = c;
  r.precision = dtype_name(s.dtype);
  const bool cuda = s.device == Device::cuda;
  // A case whose ops take no bf16 tensors (a gate's f32 parameters beside bf16 activations, on
  // CUDA): time the trainer's bf16 path instead, f32 tensors inside an autocast scope (attention still runs the
  // fused bf16 kernel), and say so in the precision column.
  auto via_autocast = [&] {
    r.precision = "bf16-autocast";
    if (cuda) cuda::reset_device_allocator_peak();
    ops::AutocastScope autocast(ops::ComputePrecision::bf16);
    measure(c, s, DType::f32, r);
  };
  if (cuda) cuda::reset_device_allocator_peak();
  try {
    try {
      measure(c, s, s.dtype, r);
    } catch (const DTypeError&) {
      if (!(cuda && s.dtype == DType::bf16)) throw;
      via_autocast();
    }
    const double fwd = attention_forward_flops(c);
    r.fwd_tflops = fwd / (r.fwd_ms * 1e-3) / 1e12;
    r.fwd_bwd_tflops = (fwd + attention_backward_flops(c)) / ((r.fwd_ms + r.bwd_ms) * 1e-3) / 1e12;
  } catch (const cuda::CudaOutOfMemory&) {
    r.status = "oom";
  } catch (const std::bad_alloc&) {
    r.status = "oom (host memory)";  // an intermediate the up-front estimate did not count
  } catch (const DeviceError& e) {
    // Without a usable device nothing else will run either: that is the caller's error to report.
    if (!cuda || !cuda::available()) throw;
    r.status = std::string("error: ") + e.what();
  } catch (const Error& e) {
    r.status = std::string("error: ") + e.what();
  }
  if (cuda) r.peak_bytes = cuda::device_allocator_stats().peak_allocated_bytes;
  return r;
}

}  // namespace gattn::recipes
