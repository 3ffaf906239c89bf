// Filling a LayerInspection (models/attention.h) during an eval-mode forward: gate values per
// position, and the final attention weights, which the fused op never materialises: they are
// recovered exactly as the op's output on one-hot values (A·V with V = I, d columns per pass).
#pragma once
#include <cstdint>
#include <vector>

#include "core/tensor/tensor.h"
#include "models/attention.h"
#include "ops/attention/attention.h"

namespace gattn::models {

// Appends every value of `values` to out.gate_values and adds each sequence's mean at each position
// to out.gate_by_position (and the first sequence's to out.gate_by_token); axis 0 of `values` is the
// batch, `token_axis` the positions. `query_positions` false (a cross-attention's key gates): the
// positions are the source's, and only the first sequence's means are kept, in gate_by_token.
void inspect_gate_values(const Tensor& values, std::int64_t token_axis, LayerInspection& out,
                         bool query_positions = true);

// Averages one gate's per-position values [B, T] (`rows` = B sequences) into out.gate_by_position
// and their first row into out.gate_by_token (a layer with several gates shows their mean).
void add_gate_by_position(LayerInspection& out, const std::vector<double>& by_position, std::int64_t rows,
                          bool query_positions = true);

// The modulation's values G_ij = σ((a_i + b_j)/τ), j ≤ i, from its row and column terms [B, H, T]
// (eval mode: no noise), into out.gate_values and out.gate_by_token (mean over heads and keys).
void inspect_modulation(const ops::AttentionTerms& terms, LayerInspection& out);

// The first sequence's final attention weights [H, Tq, Tk] (row i, column j) of flash_attention on
// q [B, H, Tq, d], k [B, H, Tk, d] with `terms`, `window` and the causal mask or none.
std::vector<double> attention_weights(const Tensor& q, const Tensor& k, const ops::AttentionTerms& terms,
                                      std::int64_t window, bool causal = true);

}  // namespace gattn::models
