// Fused causal attention with the gate terms inside (FlashAttention-2 algorithm, also on the CPU):
// tiles over keys with an online softmax, saves only O, the row log-sum-exp and O(T) row
// statistics, and recomputes P tile by tile in backward. Memory is O(T·d) per head: no T×T matrix
// is ever stored. The CUDA kernels follow the same steps, so this op is their oracle.
//
// Per head, with s_ij = q_i·k_j / √d (unscaled q, k as given) and the causal/window mask j ≤ i,
// i − j < window (window 0 = full causal):
//   S_ij = s_ij + key_bias_j + (forget_cum_i − forget_cum_j)            (score, forget terms)
//   P    = softmax_j(S)
//   M_ij = α·G_ij + 1 − α,  G_ij = σ((pair_row_i + pair_col_j + n_ij)/τ)  (pair; M = 1 otherwise)
//   A    = P ⊙ M,   y_i = Σ_j A_ij v_j
// n_ij is logistic noise from Philox while gumbel is on (zero otherwise).
#pragma once
#include <cstdint>

#include "framework/tensor/random.h"
#include "framework/tensor/tensor.h"

namespace gattn::ops {

// Moments of gate values, mergeable across heads, layers and steps.
struct GateMoments {
  double sum = 0, sum_sq = 0;
  std::int64_t count = 0, below_0_1 = 0, above_0_9 = 0;
  void add(double g) {
    sum += g;
    sum_sq += g * g;
    ++count;
    below_0_1 += g < 0.1;
    above_0_9 += g > 0.9;
  }
  void merge(const GateMoments& o) {
    sum += o.sum;
    sum_sq += o.sum_sq;
    count += o.count;
    below_0_1 += o.below_0_1;
    above_0_9 += o.above_0_9;
  }
  double mean() const { return count ? sum / static_cast<double>(count) : 0.0; }
  double std() const;
  double frac_below_0_1() const { return count ? static_cast<double>(below_0_1) / static_cast<double>(count) : 0.0; }
  double frac_above_0_9() const { return count ? static_cast<double>(above_0_9) / static_cast<double>(count) : 0.0; }
};

// The moments of every value of g (f32 or f64, any device; ops/reduce.cpp). A CUDA tensor is
// reduced on the device: a few partial sums cross to the host, not the tensor.
GateMoments gate_moments(const Tensor& g);

// Sums the forward produces when asked (a by-product, no second pass): SPEC §4's attn_entropy and
// sink_ratio as sum/count over heads and queries, and for `pair` the moments of G.
struct AttentionStats {
  double entropy_sum = 0;
  std::int64_t entropy_count = 0;
  double sink_sum = 0;  // Σ A_i0 over queries i ≥ 1
  std::int64_t sink_count = 0;
  GateMoments pair_gate;
  void merge(const AttentionStats& o);
};

// The gate terms; an undefined tensor means the term is absent. Shapes are [B, H, T] unless noted.
struct AttentionGateTerms {
  Tensor key_bias;    // score: log σ(f_j)
  Tensor forget_cum;  // forget: c_i = Σ_{l ≤ i} log σ(f_l)
  Tensor pair_row;    // pair: a_i = q_i·wq + b   (both pair terms or neither)
  Tensor pair_col;    // pair: c_j = k_j·wk
  Tensor pair_alpha;  // pair: α = σ(alpha), shape [1]
  double pair_temperature = 1.0;      // τ
  Generator* pair_noise = nullptr;    // gumbel_sigmoid while training: logistic noise source
};

struct AttentionOptions {
  std::int64_t window = 0;      // 0: full causal; w > 0: keys i − w < j ≤ i
  bool entropy_output = false;  // compute the differentiable per-row entropy output
  bool pair_gate_entropy = false;  // compute the differentiable Σ h(G) output (pair only)
  AttentionStats* stats = nullptr; // filled (added to) when non-null
};

struct AttentionResult {
  Tensor out;            // [B, H, T, d]
  Tensor row_entropy;    // [B, H, T]: −Σ_j A_ij ln A_ij (defined when entropy_output)
  Tensor gate_entropy;   // [B, H]: Σ_ij h(G_ij), h the binary entropy (defined when pair_gate_entropy)
};

// q, k, v: [B, H, T, d], f32 or f64, same dtype. Autograd-aware in q, k, v and every gate term.
AttentionResult flash_attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionGateTerms& gate = {},
                                const AttentionOptions& options = {});

}  // namespace gattn::ops
