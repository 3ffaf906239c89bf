// The gate options several kinds share: their registration (a kind lists the keys it reads with
// shared_gate_options in its GateKindSpec::options), their values at an optimizer step (the
// temperature schedule and the effect ramp), and the head layout of grouped gates and of gates on
// some heads only. docs/gates.md "Gate options" has the math of each key.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/tensor/tensor.h"
#include "models/config.h"
#include "models/gating/registry.h"

namespace gattn::models {

// The specs of the shared option keys named in `keys` (temperature_final, temperature_steps, hard,
// hard_threshold, groups, heads, input_norm, dropout, ramp_start, ramp_steps), for a kind's
// GateKindSpec::options. Every kind that reads a key registers the same default and check.
std::vector<GateOptionSpec> shared_gate_options(std::initializer_list<const char*> keys);
// Every shared option key, in the order the run's config writes them.
const std::vector<std::string>& shared_gate_option_keys();

// An entry's shared options, read once when the gate is built; a key the kind does not register
// reads as its default (the option is off).
struct GateOptions {
  double temperature = 1.0;        // τ at step 0
  double temperature_final = 1.0;  // τ after temperature_steps steps
  std::int64_t temperature_steps = 0;
  bool hard = false;
  double hard_threshold = 0.5;
  std::int64_t groups = 1;
  std::vector<std::int64_t> heads;  // the heads with a gate, ascending; empty = every head
  bool input_norm = false;
  double dropout = 0.0;
  std::int64_t ramp_start = 0, ramp_steps = 0;

  static GateOptions of(const GateConfig& gate);
  // τ(s) = τ₀ + (τ₁ − τ₀)·min(1, s/temperature_steps), τ₀ after that many steps when it is 0.
  double temperature_at(std::int64_t step) const;
  // r(s) = clamp((s − ramp_start)/ramp_steps, 0, 1); with ramp_steps 0, 1[s ≥ ramp_start].
  double ramp_at(std::int64_t step) const;
  // Whether the gate's effect is exactly today's plain gate at every step (no hard, dropout or ramp).
  bool plain_effect() const { return !hard && dropout == 0.0 && ramp_at(0) == 1.0; }
};

// The gate as evaluation and generation compute it at optimizer step `step`: a ramp that is over
// is no ramp, a temperature schedule that has ended is its final temperature, and dropout (drawn
// only while training) is 0. A gate fine-tuned in through a ramp (train.init_from) is then the plain
// gate it has become, which is what `gattn export` compares with another architecture's gate.
GateConfig settled_gate(const GateConfig& gate, std::int64_t step);

// How a kind's per-head gate values map to heads: `groups` consecutive heads share one unit, and
// only the units of the carried heads (`heads`) exist. Unit u of U serves heads heads_of_unit[u].
struct HeadUnits {
  std::int64_t n_head = 1, groups = 1, units = 1;
  std::vector<std::int64_t> unit_of_head;                // [H]: the head's unit, −1 without a gate
  std::vector<std::vector<std::int64_t>> heads_of_unit;  // [U]
  bool every_head() const { return units * groups == n_head; }
  bool one_per_head() const { return groups == 1 && every_head(); }
};
HeadUnits head_units(std::int64_t n_head, const GateOptions& options);

// x [..., U·w] (w values per unit) -> [..., H·w]: each head reads its unit's w values, a head
// without a gate reads `neutral` (1 for a multiplying gate, 0 for a logit term) and passes no
// gradient. Exact: a copy, not arithmetic, on the values it moves.
Tensor expand_to_heads(const Tensor& x, const HeadUnits& units, std::int64_t width, double neutral);

// The heads of x [B, H, ...] that carry a gate, in head order ([B, |heads|, ...]), and the inverse:
// y [B, H, ...] with the carried heads replaced by `gated` [B, |heads|, ...].
Tensor carried_heads(const Tensor& x, const HeadUnits& units);
Tensor with_carried_heads(const Tensor& y, const Tensor& gated, const HeadUnits& units);

}  // namespace gattn::models
