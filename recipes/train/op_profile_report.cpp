#include "recipes/train/op_profile_report.h"

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

namespace gattn::recipes {

namespace {

using Entry = std::pair<std::string, autograd::profile::OpTimes>;

std::vector<Entry> by_cost(const OpProfile& profile) {
  std::vector<Entry> rows(profile.begin(), profile.end());
  std::stable_sort(rows.begin(), rows.end(), [](const Entry& a, const Entry& b) {
    return a.second.forward_s + a.second.backward_s > b.second.forward_s + b.second.backward_s;
  });
  return rows;
}

double total_seconds(const OpProfile& profile) {
  double s = 0;
  for (const auto& [name, t] : profile) s += t.forward_s + t.backward_s;
  return s;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace

std::string op_profile_table(const OpProfile& profile, std::int64_t steps, const StepRate& rate) {
  const double per = steps > 0 ? 1.0 / static_cast<double>(steps) : 0.0;
  const double total = total_seconds(profile), wall = rate.wall_s > 0 ? rate.wall_s : total;
  std::string out = "op profile over " + std::to_string(steps) + " steps: " + fixed(1e3 * wall * per, 2) +
                    " ms per step (the ops " + fixed(1e3 * total * per, 2) + " ms, the rest between them), " +
                    fixed(static_cast<double>(rate.tokens) * per, 0) + " tokens, " +
                    fixed(rate.flops_per_token * static_cast<double>(rate.tokens) * per / 1e9, 3) +
                    " model GFLOP per step: " + fixed(rate.gflops(), 1) + " GFLOP/s";
  if (rate.peak.gflops > 0)
    out += " = " + fixed(rate.peak_percent(), 1) + " % of this machine's FMA peak (" + fixed(rate.peak.gflops, 1) +
           " GFLOP/s measured, " + rate.peak.isa + " FMA loop, " + std::to_string(rate.threads) + " thread" +
           (rate.threads == 1 ? "" : "s") + ")";
  else
    out += " (no FMA peak measured on this CPU)";
  out +=
      "\n\n| op | forward ms | backward ms | share of the step | calls per step (fwd / bwd) |\n"
      "| --- | --- | --- | --- | --- |\n";
  for (const auto& [name, t] : by_cost(profile)) {
    const double share = wall > 0 ? 100.0 * (t.forward_s + t.backward_s) / wall : 0.0;
    out += "| " + name + " | " + fixed(1e3 * t.forward_s * per, 3) + " | " + fixed(1e3 * t.backward_s * per, 3) +
           " | " + fixed(share, 1) + " % | " + fixed(static_cast<double>(t.forward_calls) * per, 1) + " / " +
           fixed(static_cast<double>(t.backward_calls) * per, 1) + " |\n";
  }
  if (wall > total)
    out += "| (between the ops: autograd, allocation, the loop) | | | " + fixed(100.0 * (wall - total) / wall, 1) +
           " % | |\n";
  return out;
}

nlohmann::json op_profile_json(const OpProfile& profile, std::int64_t steps, const StepRate& rate) {
  const double per = steps > 0 ? 1.0 / static_cast<double>(steps) : 0.0;
  const double total = total_seconds(profile), wall = rate.wall_s > 0 ? rate.wall_s : total;
  nlohmann::json ops = nlohmann::json::array();
  for (const auto& [name, t] : by_cost(profile))
    ops.push_back({{"op", name},
                   {"forward_ms", 1e3 * t.forward_s * per},
                   {"backward_ms", 1e3 * t.backward_s * per},
                   {"forward_calls", static_cast<double>(t.forward_calls) * per},
                   {"backward_calls", static_cast<double>(t.backward_calls) * per},
                   {"share_of_wall", wall > 0 ? (t.forward_s + t.backward_s) / wall : 0.0}});
  return {{"steps", steps},
          {"step_ms", 1e3 * total * per},
          {"wall_ms_per_step", 1e3 * wall * per},
          {"tokens_per_step", static_cast<double>(rate.tokens) * per},
          {"model_gflop_per_step", rate.flops_per_token * static_cast<double>(rate.tokens) * per / 1e9},
          {"model_gflops", rate.gflops()},
          {"fma_peak_gflops", rate.peak.gflops},
          {"fma_peak_isa", rate.peak.isa},
          {"threads", rate.threads},
          {"peak_percent", rate.peak_percent()},
          {"ops", ops}};
}

}  // namespace gattn::recipes
