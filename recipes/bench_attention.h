// One timed case of `gattn bench attention`: ops::flash_attention with one gate kind's terms, as
// the model feeds it, forward and backward, on one shape. Separate from the CLI so tests can call it.
#pragma once
#include <cstdint>
#include <string>

#include "framework/tensor/dtype.h"

namespace gattn::recipes {

// The gate kinds the benchmark knows: the ones whose cost lives inside the attention op (plus
// `output`, whose gate is one elementwise multiply after it).
inline constexpr const char* kBenchKinds[] = {"none", "output", "score", "forget", "pair"};
bool is_bench_kind(const std::string& kind);

struct AttentionBenchCase {
  std::string kind;
  std::int64_t B = 1, T = 1, H = 1, d = 1;
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
  double fwd_ms = 0, bwd_ms = 0;           // medians over the timed iterations
  double fwd_tflops = 0, fwd_bwd_tflops = 0;
  std::int64_t peak_bytes = -1;            // the caching allocator's peak during the case; -1 on the CPU
};

// The FLOP convention of the report (FlashAttention's): forward 4·B·H·T²·d halved for the causal
// mask; backward 2.5× forward. Gate terms are not counted: the same work for every kind.
double attention_forward_flops(const AttentionBenchCase& c);
inline double attention_backward_flops(const AttentionBenchCase& c) { return 2.5 * attention_forward_flops(c); }

// Runs one case. Out of device memory and op errors come back as the result's status; only a
// device that cannot be used at all throws.
AttentionBenchResult run_attention_bench(const AttentionBenchCase& c, AttentionBenchSettings& s);

}  // namespace gattn::recipes
