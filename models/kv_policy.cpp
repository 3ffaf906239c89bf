// The eviction policies and the checks of the inference options against a model.
#include "models/kv_policy.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#include "core/tensor/error.h"
#include "models/gating/gate.h"

namespace gattn::models {

std::string policy_name(KVPolicy policy) {
  switch (policy) {
    case KVPolicy::full:
      return "full";
    case KVPolicy::window:
      return "window";
    case KVPolicy::sink_window:
      return "sink_window";
    case KVPolicy::h2o:
      return "h2o";
    case KVPolicy::gate:
      return "gate";
  }
  return "?";
}

KVPolicy parse_kv_policy(const std::string& name) {
  for (KVPolicy p : {KVPolicy::full, KVPolicy::window, KVPolicy::sink_window, KVPolicy::h2o, KVPolicy::gate})
    if (policy_name(p) == name) return p;
  throw ValueError("--kv-policy: '" + name + "' is not a policy (full, window, sink_window, h2o, gate)");
}

namespace {

bool any_gate(const GPT& model, bool (Gate::*property)() const) {
  for (std::size_t i = 0; i < model.blocks->size(); ++i)
    for (const auto& g : (*model.blocks)[i].attn->gates)
      if (((*g).*property)()) return true;
  return false;
}

// The `count` rows of [lo, hi) with the lowest value (ties: the oldest), ascending.
std::vector<std::int64_t> lowest_rows(const std::vector<double>& value, std::int64_t lo, std::int64_t hi,
                                      std::int64_t count) {
  std::vector<std::int64_t> rows(static_cast<std::size_t>(hi - lo));
  std::iota(rows.begin(), rows.end(), lo);
  const auto less = [&](std::int64_t a, std::int64_t b) {
    const double va = value[static_cast<std::size_t>(a)], vb = value[static_cast<std::size_t>(b)];
    return va < vb || (va == vb && a < b);
  };
  std::partial_sort(rows.begin(), rows.begin() + count, rows.end(), less);
  rows.resize(static_cast<std::size_t>(count));
  std::sort(rows.begin(), rows.end());
  return rows;
}

// Key head bh's rows 0 … length−1 of a per-row term [B, H, capacity], as doubles: the sum over the
// query heads that read the key head (one without grouping), so a grouped key head is ranked by
// what all of its query heads give it.
std::vector<double> head_row_values(const Tensor& term, const LayerKVCache& layer, std::int64_t bh,
                                    std::int64_t length) {
  std::vector<double> out(static_cast<std::size_t>(length), 0.0);
  const std::int64_t kv_heads = layer.k.size(1), group = layer.query_heads / kv_heads;
  const std::int64_t b = bh / kv_heads, g = bh % kv_heads;
  for (std::int64_t h = g * group; h < (g + 1) * group; ++h) {
    const std::int64_t base = (b * layer.query_heads + h) * term.size(2);
    for (std::int64_t j = 0; j < length; ++j) out[static_cast<std::size_t>(j)] += term.at(base + j);
  }
  return out;
}

std::vector<std::int64_t> oldest(std::int64_t first, std::int64_t count) {
  std::vector<std::int64_t> rows(static_cast<std::size_t>(count));
  std::iota(rows.begin(), rows.end(), first);
  return rows;
}

}  // namespace

bool gates_value_keys(const GPT& model) { return any_gate(model, &Gate::ranks_keys); }

void check_inference_options(const InferenceOptions& o, const GPT& model) {
  const std::int64_t T = model.config().block_size;
  if (o.bounded() && (o.budget < 1 || o.budget > T))
    throw ValueError("--kv-budget: must be between 1 and the context (model.block_size=" + std::to_string(T) +
                     "), got " + std::to_string(o.budget));
  if (o.policy == KVPolicy::sink_window && (o.sinks < 0 || o.sinks >= o.budget))
    throw ValueError(
        "--kv-sinks: sink_window keeps the first --kv-sinks positions and needs 0 <= sinks < --kv-budget=" +
        std::to_string(o.budget) + ", got " + std::to_string(o.sinks));
  if (o.policy == KVPolicy::gate && !gates_value_keys(model))
    throw ValueError(
        "--kv-policy gate: the model has no gate that values keys (score with form additive, forget or pair); use "
        "window, sink_window or h2o");
  if (o.recent >= 0 && o.recent >= o.budget && (o.policy == KVPolicy::h2o || o.policy == KVPolicy::gate))
    throw ValueError("--kv-recent: the newest keys kept must be fewer than --kv-budget=" + std::to_string(o.budget) +
                     ", got " + std::to_string(o.recent));
  if (o.top_k_keys < 0) throw ValueError("--top-k-keys: must be >= 0, got " + std::to_string(o.top_k_keys));
  if (!(o.skip_heads_below >= 0 && o.skip_heads_below <= 1))
    throw ValueError("--skip-heads-below: must be in [0, 1], got " + std::to_string(o.skip_heads_below));
  if (o.skip_heads_below > 0 && !any_gate(model, &Gate::gates_whole_heads))
    throw ValueError(
        "--skip-heads-below: the model has no headwise output gate (model.gate.granularity: headwise), so no head's "
        "output is scaled by one gate value");
}

std::vector<std::int64_t> rows_to_evict(const InferenceOptions& o, const LayerKVCache& layer, std::int64_t bh,
                                        std::int64_t count, std::int64_t length) {
  if (count <= 0) return {};
  if (count > length)
    throw ShapeError("rows_to_evict: " + std::to_string(count) + " of " + std::to_string(length) + " rows");
  // h2o and gate choose among all but the newest recent_kept() rows.
  const std::int64_t candidates = std::max(count, length - o.recent_kept());
  switch (o.policy) {
    case KVPolicy::full:
      throw std::logic_error("rows_to_evict: policy full never evicts");
    case KVPolicy::window:
      return oldest(0, count);
    case KVPolicy::sink_window:
      return oldest(std::min(o.sinks, length - count), count);
    case KVPolicy::h2o:
      // The newest rows are kept whatever they received (H2O's recent window, budget/2).
      return lowest_rows(head_row_values(layer.key_attention, layer, bh, length), 0, candidates, count);
    case KVPolicy::gate: {
      const Tensor& term = layer.col_bias.defined() ? layer.col_bias : layer.modulation_col;
      if (!term.defined()) return oldest(0, count);
      return lowest_rows(head_row_values(term, layer, bh, length), 0, candidates, count);
    }
  }
  return {};
}

void make_room(KVCache& cache, std::int64_t n) {
  const InferenceOptions& o = cache.options();
  const std::int64_t count = cache.length() + n - cache.capacity();
  if (count <= 0) return;
  // The exact cache never evicts, and no policy can fit more new rows than it has.
  if (!o.bounded() || n > cache.capacity())
    throw ShapeError("KVCache: cache rows " + std::to_string(cache.length()) + " … " +
                     std::to_string(cache.length() + n - 1) + " exceed the cache's capacity " +
                     std::to_string(cache.capacity()) + (o.bounded() ? " (the KV budget)" : " (model.block_size)"));
  for (LayerKVCache& layer : cache.layers) {
    const std::int64_t heads = layer.k.size(0) * layer.k.size(1);
    for (std::int64_t bh = 0; bh < heads; ++bh)
      remove_rows(layer, bh, rows_to_evict(o, layer, bh, count, cache.length()), cache.length());
    cache.counters.evicted += heads * count;
  }
  cache.shrink(count);
}

}  // namespace gattn::models
