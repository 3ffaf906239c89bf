// One timed case of `gattn bench attention`: a block's attention with one gate kind, as the model
// runs it between the qkv and output projections (the gate's own products, its fused terms, the
// attention call or mixture, its output gating), forward and backward, on one shape. Separate from
// the CLI so tests can call it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor/dtype.h"

namespace gattn::recipes {

// The kinds the benchmark runs: none and every registered gate kind (an input gate acts before the
// qkv projection, outside what is timed here: its case times the plain attention).
std::vector<std::string> bench_kinds();
bool is_bench_kind(const std::string& kind);

struct AttentionBenchCase {
  std::string kind;
  std::int64_t B = 1, T = 1, H = 1, d = 1;
  std::int64_t kv_heads = 0;  // k and v heads (grouped-query attention), dividing H; 0: H
  std::int64_t kv() const { return kv_heads > 0 ? kv_heads : H; }
};

struct AttentionBenchSettings {
  Device device = Device::cpu;
  DType dtype = DType::f32;  // bf16 only on CUDA
  int warmup = 2;
  int iters = 5;
  std::uint64_t seed = 0;
};

struct AttentionBenchResult {
  AttentionBenchCase shape;
  std::string status = "ok";  // "ok", "oom" or "error: <message>"
  // What ran: the dtype asked for, or "bf16-autocast" when the op took no bf16 tensors and the case
  // ran on f32 tensors inside an ops::AutocastScope(bf16), the trainer's bf16 path (whether the
  // products then run in bf16 is up to the op honouring the scope).
  std::string precision;
  double fwd_ms = 0, bwd_ms = 0;  // medians over the timed iterations
  double fwd_tflops = 0, fwd_bwd_tflops = 0;
  std::int64_t peak_bytes = -1;  // the caching allocator's peak during the case; -1 on the CPU
};

// The FLOP convention of the report (FlashAttention's): forward 4·B·H·T²·d halved for the causal
// mask; backward 2.5× forward. Gate work is not counted: the same FLOPs for every kind, so the
// rates compare what each kind costs; H counts the query heads, whatever the key/value heads.
double attention_forward_flops(const AttentionBenchCase& c);
inline double attention_backward_flops(const AttentionBenchCase& c) { return 2.5 * attention_forward_flops(c); }

// Runs one case. Out of device memory and op errors come back as the result's status; only a
// device that cannot be used at all throws.
AttentionBenchResult run_attention_bench(const AttentionBenchCase& c, AttentionBenchSettings& s);

}  // namespace gattn::recipes
