// The op profile of a training run (`gattn train --profile-ops`) as a table and as JSON.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "core/autograd/op_profile.h"
#include "framework/runtime/fma_peak.h"

namespace gattn::recipes {

using OpProfile = std::map<std::string, autograd::profile::OpTimes>;

// The profiled steps end to end, in FLOP-time terms: their wall time (forward, backward, gradient
// clipping and the optimizer step; not evaluation, logging or checkpoints), the tokens this process
// trained on in them, the model's training FLOPs per token (models::GPT::flops_per_token), and the
// FMA peak measured on this machine at the run's thread count.
struct StepRate {
  double wall_s = 0;
  std::int64_t tokens = 0;
  double flops_per_token = 0;
  int threads = 1;
  FmaPeak peak;
  double gflops() const { return wall_s > 0 ? flops_per_token * static_cast<double>(tokens) / wall_s / 1e9 : 0; }
  // The step's share of the measured peak, in %; 0 where the peak was not measured.
  double peak_percent() const { return peak.gflops > 0 ? 100.0 * gflops() / peak.gflops : 0; }
};

// A markdown table, most expensive first: per op, forward and backward milliseconds per step and
// calls per step, each op's share of the profiled time, and the total per step; above it the steps'
// wall time, model GFLOP/s and percentage of the measured FMA peak.
std::string op_profile_table(const OpProfile& profile, std::int64_t steps, const StepRate& rate);

// {"steps": N, "step_ms": total of the ops, "wall_ms_per_step", "tokens_per_step",
// "model_gflop_per_step", "model_gflops", "fma_peak_gflops", "fma_peak_isa", "threads",
// "peak_percent", "ops": [{"op", "forward_ms", "backward_ms", "forward_calls", "backward_calls",
// "share_of_wall"}, …]} with times per step, most expensive first.
nlohmann::json op_profile_json(const OpProfile& profile, std::int64_t steps, const StepRate& rate);

}  // namespace gattn::recipes
