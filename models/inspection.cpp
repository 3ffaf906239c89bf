// Gate values and attention weights of one layer for `gattn report`.
#include "models/inspection.h"

#include <algorithm>
#include <cmath>

#include "core/autograd/grad_mode.h"
#include "ops/shape.h"

namespace gattn::models {

namespace {

// The first sequence of a [B, …] term (undefined stays undefined).
Tensor first_sequence(const Tensor& t) { return t.defined() ? ops::slice(t.detach(), 0, 0, 1) : t; }

}  // namespace

void inspect_gate_values(const Tensor& values, std::int64_t token_axis, LayerInspection& out, bool query_positions) {
  const std::vector<double> v = values.to_vector();
  out.gate_values.insert(out.gate_values.end(), v.begin(), v.end());
  const std::int64_t B = values.size(0), T = values.size(token_axis);
  std::int64_t inner = 1;
  for (std::int64_t a = token_axis + 1; a < values.dim(); ++a) inner *= values.size(a);
  const std::int64_t per_sequence = values.numel() / B;
  std::vector<double> sum(static_cast<std::size_t>(B * T), 0.0);
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t i = 0; i < per_sequence; ++i)
      sum[static_cast<std::size_t>(b * T + (i / inner) % T)] += v[static_cast<std::size_t>(b * per_sequence + i)];
  const double per_token = static_cast<double>(per_sequence / T);
  for (double& s : sum) s /= per_token;
  add_gate_by_position(out, sum, B, query_positions);
}

namespace {

// Averages `values` into `into` as the (sources + 1)-th of the gates it pools (0: the first, which
// it replaces).
void average_into(std::vector<double>& into, const std::vector<double>& values, int sources) {
  if (sources == 0) {
    into = values;
    return;
  }
  const auto n = static_cast<double>(sources);
  for (std::size_t i = 0; i < values.size(); ++i) into[i] = (into[i] * n + values[i]) / (n + 1);
}

}  // namespace

void add_gate_by_position(LayerInspection& out, const std::vector<double>& by_position, std::int64_t rows,
                          bool query_positions) {
  const std::size_t T = by_position.size() / static_cast<std::size_t>(std::max<std::int64_t>(rows, 1));
  const std::vector<double> first(by_position.begin(), by_position.begin() + static_cast<std::ptrdiff_t>(T));
  const int sources = out.gate_by_token.size() == T ? out.gate_by_token_sources : 0;
  average_into(out.gate_by_token, first, sources);
  out.gate_by_token_sources = sources + 1;
  if (!query_positions) return;
  const int position_sources = out.gate_by_position.size() == by_position.size() ? out.gate_by_position_sources : 0;
  average_into(out.gate_by_position, by_position, position_sources);
  out.gate_by_position_sources = position_sources + 1;
}

void inspect_modulation(const ops::AttentionTerms& terms, LayerInspection& out) {
  const std::int64_t B = terms.modulation_row.size(0), H = terms.modulation_row.size(1),
                     T = terms.modulation_row.size(2);
  const std::vector<double> a = terms.modulation_row.to_vector(), c = terms.modulation_col.to_vector();
  const double tau = terms.modulation_temperature;
  std::vector<double> by_position(static_cast<std::size_t>(B * T), 0.0);
  // The heads the modulation is meant for (every head, or those of a per-head α's `heads`).
  std::vector<std::int64_t> heads = terms.modulation_heads;
  if (heads.empty())
    for (std::int64_t h = 0; h < H; ++h) heads.push_back(h);
  const auto n_heads = static_cast<double>(heads.size());
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h : heads)
      for (std::int64_t i = 0; i < T; ++i)
        for (std::int64_t j = 0; j <= i; ++j) {
          const std::size_t row = static_cast<std::size_t>((b * H + h) * T);
          const double u = (a[row + static_cast<std::size_t>(i)] + c[row + static_cast<std::size_t>(j)]) / tau;
          double g = terms.modulation_softplus ? (u > 0 ? u + std::log1p(std::exp(-u)) : std::log1p(std::exp(u)))
                                               : 1.0 / (1.0 + std::exp(-u));
          if (!std::isnan(terms.modulation_hard_threshold)) g = g > terms.modulation_hard_threshold ? 1.0 : 0.0;
          out.gate_values.push_back(g);
          by_position[static_cast<std::size_t>(b * T + i)] += g / (n_heads * static_cast<double>(i + 1));
        }
  add_gate_by_position(out, by_position, B);
}

std::vector<double> attention_weights(const Tensor& q, const Tensor& k, const ops::AttentionTerms& terms,
                                      std::int64_t window, bool causal) {
  NoGradGuard no_grad;
  const Tensor q0 = first_sequence(q), k0 = first_sequence(k);
  const std::int64_t H = q0.size(1), Tq = q0.size(2), T = k0.size(2), d = q0.size(3), Hkv = k0.size(1);
  ops::AttentionTerms t = terms;
  t.row_bias = first_sequence(terms.row_bias);
  t.col_bias = first_sequence(terms.col_bias);
  t.modulation_row = first_sequence(terms.modulation_row);
  t.modulation_col = first_sequence(terms.modulation_col);
  if (t.modulation_alpha.defined()) t.modulation_alpha = t.modulation_alpha.detach();
  t.modulation_noise = nullptr;
  t.modulation_dropout = 0;  // the map shows what the model computes in eval
  t.modulation_dropout_noise = nullptr;
  ops::AttentionOptions options;
  options.window = window;
  options.causal = causal;
  std::vector<double> A(static_cast<std::size_t>(H * Tq * T), 0.0);
  // Pass p sends key j = p·d + c to output column c: out[i, c] = Σ_j A_ij V_jc = A_i,p·d+c.
  for (std::int64_t first = 0; first < T; first += d) {
    // One value row per key head (H_kv ≤ H): the same one-hot pattern for each.
    std::vector<double> onehot(static_cast<std::size_t>(Hkv * T * d), 0.0);
    for (std::int64_t h = 0; h < Hkv; ++h)
      for (std::int64_t c = 0; c < d && first + c < T; ++c)
        onehot[static_cast<std::size_t>((h * T + first + c) * d + c)] = 1.0;
    const std::vector<double> out =
        ops::flash_attention(q0, k0, Tensor::from(onehot, k0.shape(), q0.dtype()), t, options).out.to_vector();
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t i = 0; i < Tq; ++i)
        for (std::int64_t c = 0; c < d && first + c < T; ++c)
          A[static_cast<std::size_t>((h * Tq + i) * T + first + c)] =
              out[static_cast<std::size_t>((h * Tq + i) * d + c)];
  }
  return A;
}

}  // namespace gattn::models
