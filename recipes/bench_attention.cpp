// The inputs mirror what models/gates/ hand ops::flash_attention (random values of the same shapes
// and ranges), so the timing is the model's attention cost for each gate kind; gradients flow to
// q, k, v and every gate term, as in training.
#include "recipes/bench_attention.h"

#include <algorithm>
#include <new>
#include <vector>

#include "framework/cuda/device.h"
#include "framework/cuda/device_memory.h"
#include "framework/cuda/error.h"
#include "framework/tensor/random.h"
#include "ops/attention.h"
#include "ops/autocast.h"
#include "ops/elementwise.h"
#include "ops/scan.h"
#include "ops/unary.h"
#include "recipes/bench_clock.h"

namespace gattn::recipes {

namespace {

struct Inputs {
  Tensor q, k, v, grad_out;
  Tensor gate_logits;  // output: [B, H, T, d], σ of it multiplies the op's output
  ops::AttentionTerms terms;
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
  const Shape qkv{c.B, c.H, c.T, c.d}, row{c.B, c.H, c.T};
  in.q = place(normal(qkv, gen), dtype, device, true, in.leaves);
  in.k = place(normal(qkv, gen), dtype, device, true, in.leaves);
  in.v = place(normal(qkv, gen), dtype, device, true, in.leaves);
  in.grad_out = place(normal(qkv, gen), dtype, device, false, in.leaves);
  if (c.kind == "output") {
    in.gate_logits = place(normal(qkv, gen), dtype, device, true, in.leaves);
  } else if (c.kind == "score") {
    // col_bias = log σ(f), f the gate's per-key logit.
    in.terms.col_bias = place(ops::log_sigmoid(normal(row, gen)), dtype, device, true, in.leaves);
  } else if (c.kind == "forget") {
    // c_i = Σ_{l ≤ i} log σ(f_l) as row_bias = c, col_bias = −c: computed once here, leaves of the
    // timed graph like the score gate's bias.
    const Tensor c_host = ops::cumsum(ops::log_sigmoid(normal(row, gen)), 2);
    in.terms.row_bias = place(c_host, dtype, device, true, in.leaves);
    in.terms.col_bias = place(ops::neg(c_host), dtype, device, true, in.leaves);
  } else if (c.kind == "pair") {
    in.terms.modulation_row = place(normal(row, gen), dtype, device, true, in.leaves);
    in.terms.modulation_col = place(normal(row, gen), dtype, device, true, in.leaves);
    in.terms.modulation_alpha = place(Tensor::full({1}, 0.5), dtype, device, true, in.leaves);
  }
  return in;
}

Tensor forward(const Inputs& in) {
  Tensor out = ops::flash_attention(in.q, in.k, in.v, in.terms).out;
  if (in.gate_logits.defined()) out = ops::mul(out, ops::sigmoid(in.gate_logits));  // the model's output gate
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
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

bool is_bench_kind(const std::string& kind) {
  return std::find(std::begin(kBenchKinds), std::end(kBenchKinds), kind) != std::end(kBenchKinds);
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
  // A case whose ops take no bf16 tensors (the output gate's elementwise multiply, on CUDA): time
  // the trainer's bf16 path instead, f32 tensors inside an autocast scope (attention still runs the
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
