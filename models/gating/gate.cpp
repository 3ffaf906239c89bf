// The hooks' defaults (a gate implements only the ones where it acts) and the attention calls the
// gates share: the fused op with its statistics, regularisers and inspection, and the cached op.
#include "models/gating/gate.h"

#include <stdexcept>

#include "models/inspection.h"
#include "models/regularizers.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"

namespace gattn::models {

Tensor Gate::gate_input(const AttentionInputs&, const Tensor& x, AttentionContext&) { return x; }

void Gate::gate_qk(AttentionInputs&, AttentionContext&) {}

void Gate::add_terms(const AttentionInputs&, ops::AttentionTerms&, AttentionContext&) {}

void Gate::add_cached_terms(const AttentionInputs&, LayerKVCache&, std::int64_t, ops::CachedAttentionInputs&,
                            const AttentionContext&) {}

Tensor Gate::attend(const AttentionInputs&, const ops::AttentionTerms&, AttentionContext&) {
  throw std::logic_error("Gate::attend called on a gate that does not mix attentions");
}

Tensor Gate::attend_cached(const AttentionInputs&, const LayerKVCache&, std::int64_t, const ops::CachedAttentionInputs&,
                           const AttentionContext&) {
  throw std::logic_error("Gate::attend_cached called on a gate that does not mix attentions");
}

Tensor Gate::head_gate(const AttentionInputs&, const AttentionContext&) const { return Tensor(); }

Tensor Gate::gate_heads(const AttentionInputs&, const Tensor& y, AttentionContext&) { return y; }

Tensor Gate::gate_output(const AttentionInputs&, const Tensor& y, AttentionContext&) { return y; }

Tensor Gate::merge_state(const AttentionInputs&, const Tensor& s, const Tensor& c, AttentionContext&) { return s + c; }

void AttentionContext::add_regularizer(const std::string& name, const Tensor& term, double count) {
  RegularizerSum& r = regularizers[name];
  accumulate(r.sum, term);
  r.count += count;
}

namespace {

// The (query, key) pairs a modulation acts on: visible keys of the active queries, every head.
double modulated_pairs(const Tensor& q, const ops::AttentionOptions& options) {
  const std::int64_t B = q.size(0), H = q.size(1), T = q.size(2), w = options.window;
  auto keys = [&](std::int64_t i) { return static_cast<double>(w == 0 ? i + 1 : std::min(i + 1, w)); };
  double pairs = 0;
  if (!options.active_queries.defined()) {
    for (std::int64_t i = 0; i < T; ++i) pairs += keys(i);
    return pairs * static_cast<double>(B * H);
  }
  const std::vector<double> active = options.active_queries.to_vector();  // [B, T]
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t i = 0; i < T; ++i)
      if (active[static_cast<std::size_t>(b * T + i)] != 0) pairs += keys(i);
  return pairs * static_cast<double>(H);
}

// Statistics of a modulation meant for some heads only (α = 0 on the rest): the pooled moments
// become those heads' alone, and the other heads' entries are emptied.
void keep_modulated_heads(ops::AttentionStats& stats, const std::vector<std::int64_t>& heads) {
  if (heads.empty()) return;
  std::vector<ops::GateMoments> by_head(stats.modulation_by_head.size());
  stats.modulation = {};
  for (std::int64_t h : heads) {
    const auto i = static_cast<std::size_t>(h);
    if (i >= by_head.size()) continue;
    by_head[i] = stats.modulation_by_head[i];
    stats.modulation.merge(by_head[i]);
  }
  stats.modulation_by_head = std::move(by_head);
}

void merge_by_head(std::vector<ops::GateMoments>& into, const std::vector<ops::GateMoments>& from) {
  if (from.empty()) return;
  if (into.size() < from.size()) into.resize(from.size());
  for (std::size_t h = 0; h < from.size(); ++h) into[h].merge(from[h]);
}

// [1, H]: 1 on the listed heads, 0 elsewhere.
Tensor head_indicator(const std::vector<std::int64_t>& heads, std::int64_t H, DType dtype, Device device) {
  std::vector<double> m(static_cast<std::size_t>(H), 0.0);
  for (std::int64_t h : heads) m[static_cast<std::size_t>(h)] = 1.0;
  return Tensor::from(m, {1, H}, dtype).to(device);
}

}  // namespace

ops::AttentionResult run_attention(const AttentionInputs& in, const ops::AttentionTerms& terms, AttentionContext& ctx,
                                   ops::AttentionOptions options, bool report_rows) {
  ops::AttentionStats stats;
  const bool collect = report_rows && ctx.collect_stats && ctx.stats;
  if (report_rows) options.stats = collect ? &stats : nullptr;
  const bool modulated = terms.modulation_row.defined();
  options.entropy_output = options.entropy_output || (report_rows && ctx.wants(kAttnEntropy));
  // The binary entropy is a σ gate's (a softplus modulation's values exceed 1, and like the other
  // softplus gates it adds no entropy term); the sum serves gate_l1 for any activation.
  options.modulation_entropy = modulated && !terms.modulation_softplus && ctx.wants(kGateEntropy);
  options.modulation_sum = modulated && ctx.wants(kGateL1);
  ops::AttentionResult r = ops::flash_attention(in.q, in.k, in.v, terms, options);
  if (collect) {
    if (modulated) keep_modulated_heads(stats, terms.modulation_heads);
    ctx.stats->attention.merge(stats);
    ctx.stats->gate.merge(stats.modulation);  // the modulation's values are gate values (empty without one)
    merge_by_head(ctx.stats->gate_by_head, stats.modulation_by_head);
  }
  if (report_rows && ctx.wants(kAttnEntropy))
    ctx.add_regularizer(kAttnEntropy, ops::sum(r.row_entropy), static_cast<double>(r.row_entropy.numel()));
  // A modulation output [B, H] as a regulariser: only the heads the modulation is meant for count,
  // averaged over their visible (query, key) pairs.
  auto add_modulation_regularizer = [&](const char* name, const Tensor& per_head) {
    const std::vector<std::int64_t>& heads = terms.modulation_heads;
    const Tensor kept =
        heads.empty()
            ? per_head
            : ops::mul(per_head, head_indicator(heads, per_head.size(1), per_head.dtype(), per_head.device()));
    const double share =
        heads.empty() ? 1.0 : static_cast<double>(heads.size()) / static_cast<double>(per_head.size(1));
    ctx.add_regularizer(name, ops::sum(kept), modulated_pairs(in.q, options) * share);
  };
  if (options.modulation_entropy) add_modulation_regularizer(kGateEntropy, r.modulation_entropy);
  if (options.modulation_sum) add_modulation_regularizer(kGateL1, r.modulation_sum);
  if (report_rows && ctx.inspect) {
    ctx.inspect->attention = attention_weights(in.q, in.k, terms, options.window, options.causal);
    ctx.inspect->keys = in.k.size(2);
    if (modulated) inspect_modulation(terms, *ctx.inspect);
  }
  return r;
}

Tensor run_cached_attention(const AttentionInputs& in, const LayerKVCache& cache, std::int64_t pos,
                            ops::CachedAttentionInputs terms) {
  terms.q = in.q;
  terms.k = cache.k;
  terms.v = cache.v;
  terms.length = pos + in.q.size(2);
  terms.key_positions = cache.key_positions;
  terms.key_attention = cache.key_attention;
  return ops::cached_attention(terms);
}

}  // namespace gattn::models
