// Fused attention with additive logit terms and a multiplicative modulation inside
// (FlashAttention-2 algorithm, also on the CPU): tiles over keys with an online softmax, saves only
// O, the row log-sum-exp and O(Tq) row statistics, and recomputes P tile by tile in backward. Memory
// is O(T·d) per head: no Tq×Tk matrix is ever stored. The CUDA kernels follow the same steps, so
// this op is their oracle.
//
// Per head, queries i < Tq and keys j < Tk, with s_ij = q_i·k_j / √d (unscaled q, k as given) and
// the mask (AttentionOptions::causal, ::window):
//   causal (the default, a decoder's self-attention; Tq = Tk): j ≤ i and, with window w > 0, i − j < w;
//   not causal (an encoder's bidirectional self-attention, or cross-attention with Tq ≠ Tk): all j.
//   S_ij = s_ij + r_i + c_j                  (row_bias r, col_bias c; each optional)
//   P    = softmax_j(S) over the visible j
//   M_ij = α·G_ij + 1 − α,  G_ij = act((a_i + b_j + n_ij)/τ)  (modulation_row a, modulation_col b; M = 1
//          without them; act σ, or softplus log(1 + eᵘ) with values in (0, ∞); a hard modulation uses
//          1[G > θ] for G, with the soft gradient; a dropped entry (modulation dropout p while
//          training) uses 1 for G, so M = 1 there, and passes no gradient through M)
//   A    = P ⊙ M,   y_i = Σ_j A_ij v_j
// n_ij is logistic noise from Philox while a noise source is given (zero otherwise; word
// (b·H + h)·Tq·Tk + i·Tk + j of the reserved B·H·Tq·Tk, h the query head). Dropout draws its own
// B·H·Tq·Tk words the same way, after the noise's: entry (i, j) is dropped when its uniform
// (top 24 bits + ½)/2²⁴ is below p.
// The modulation sum output (AttentionOptions::modulation_sum) is E_bh = Σ_ij G_ij over the visible
// entries of active rows, the soft G (before hard and dropout), with its gradient dE·act′(u)/τ
// into a_i and b_j: the pair gate's L1 penalty without a T×T matrix. r_i shifts a whole row, so P does not
// depend on it in exact arithmetic; it keeps the logits in range when the column term drifts along
// the sequence (a prefix sum p: r = p, c = −p gives p_i − p_j, bounded).
//
// Gradients: d r_i = Σ_j dS_ij, d c_j = Σ_i dS_ij (over visible entries), and the modulation terms'
// from dM = dA ⊙ P (ops/attention/cpu/flash_attention.h spells out every formula).
//
// Grouped-query attention: k and v may have fewer heads than q, H_kv dividing H, and query head h
// then reads key/value head h / (H / H_kv) — consecutive query heads share one, as Hugging Face's
// repeat_kv lays them out — in place, with no copy per query head on either device. Everything
// else stays per query head: the terms ([B, H, Tq] rows, [B, H, Tk] columns), the noise words, the
// outputs and statistics; dk and dv sum the gradients of each key/value head's query heads. H_kv = H
// is plain multi-head attention.
//
// Query rows may be skipped (AttentionOptions::active_queries): a skipped row's output and row
// entropy are 0, it adds nothing to the statistics, and no gradient flows from it. The work is
// proportional to the active rows, so a mixture of attention experts that routes each query to one
// expert pays for each expert's rows only.
//
// Adaptive computation pruning (AttentionOptions::prune_threshold θ > 0, causal only; after "Adaptive
// Computation Pruning for the Forgetting Transformer"): a (64-query tile, 64-key tile) pair is
// skipped — no q·k, no exp, no P·v, forward and backward — when a bound proves every P_ij in it
// below θ: P_ij ≤ exp(S_ij − S_ii) since lse_i ≥ S_ii (a causal row always sees its own key), and
// S_ij − S_ii ≤ scale·‖q_i‖·max_{j∈J}‖k_j‖ − s_ii + max_{j∈J} c_j − c_i (the row term cancels;
// ops/attention/prune_plan.h). The diagonal tile is never skipped. The result is the exact attention
// over the visible entries that remain (softmax renormalised over them), so with δ_i the skipped
// probability mass of row i (under the unpruned softmax), δ_i ≤ n_i·θ with n_i the row's skipped keys,
// and for every output coordinate x, as M ∈ [0, 1]:
//   |y_ix − y'_ix| ≤ 2·δ_i·max_j |v_jx|
// (the skipped terms weigh at most δ_i·max|v_x|, renormalising the kept ones moves them by at most
// δ_i/(1 − δ_i)·(1 − δ_i)·max|v_x|). The backward recomputes the same plan from the same inputs and
// is the exact gradient of the pruned forward (the plan is a constant of the inputs: no gradient
// flows through the decision). θ = 0 runs the unpruned kernels unchanged, bit for bit.
#pragma once
#include <cstdint>
#include <limits>

#include "core/tensor/random.h"
#include "core/tensor/tensor.h"

namespace gattn::ops {

// Moments of values in [0, 1] (gate or modulation values), mergeable across heads, layers and steps.
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

// Sums the forward produces when asked (a by-product, no second pass): the mean row entropy and
// the mean attention on key 0 (the sink) as sum/count over heads and active queries, and the
// moments of the modulation σ(·) values over the visible entries of active queries. Causal, the
// sink leaves out query 0 (which sees key 0 alone, A_00 = M_00 always); not causal, every active
// query counts, i = 0 included.
struct AttentionStats {
  double entropy_sum = 0;
  std::int64_t entropy_count = 0;
  double sink_sum = 0;  // Σ A_i0 over active queries i ≥ 1 (causal) or i ≥ 0 (not causal)
  std::int64_t sink_count = 0;
  GateMoments modulation;
  // The same moments per query head [H] (the heads of one sequence pooled over the batch); merge
  // adds head by head. Empty without modulation terms.
  std::vector<GateMoments> modulation_by_head;
  // With pruning (AttentionOptions::prune_threshold > 0): the forward's (query tile, key tile)
  // pairs, over heads, that were skipped and that were computed. Both 0 without pruning.
  std::int64_t pruned_tiles = 0, visited_tiles = 0;
  void merge(const AttentionStats& o);
};

// The logit and modulation terms; an undefined tensor means the term is absent. The row terms
// are [B, H, Tq], the column terms [B, H, Tk]: per query head, whatever the key/value heads.
struct AttentionTerms {
  Tensor row_bias;                      // r_i [B, H, Tq], added to every logit of query row i
  Tensor col_bias;                      // c_j [B, H, Tk], added to every logit of key column j
  Tensor modulation_row;                // a_i [B, H, Tq] (modulation_row, _col and _alpha: all or none)
  Tensor modulation_col;                // b_j [B, H, Tk]
  Tensor modulation_alpha;              // [1] or [H]: α, one or per query head, values in [0, 1], differentiable
  double modulation_temperature = 1.0;  // τ
  // θ of a hard modulation: M = α·1[G > θ] + 1 − α forward, the soft G's gradient backward
  // (straight-through). NaN: the soft modulation.
  double modulation_hard_threshold = std::numeric_limits<double>::quiet_NaN();
  Generator* modulation_noise = nullptr;  // logistic noise source (while training)
  // The modulation's activation: false σ(u); true softplus log(1 + eᵘ) (dG/du = σ(u); values in
  // (0, ∞), so M may exceed 1: refused with pruning and the modulation entropy).
  bool modulation_softplus = false;
  // p in [0, 1) of the modulation's dropout and its random source (both or neither; while training):
  // entry (i, j) reads G = 1 with probability p.
  double modulation_dropout = 0;
  Generator* modulation_dropout_noise = nullptr;
  // The heads the modulation is meant for when α is per head with zeros elsewhere (ascending); empty:
  // every head. The kernels do not read it (α_h = 0 already makes M = 1); the model's statistics,
  // regularisers and inspection count only these heads.
  std::vector<std::int64_t> modulation_heads;
};

struct AttentionOptions {
  // true: query i sees keys j ≤ i (needs Tq = Tk); false: every key (window must be 0).
  bool causal = true;
  std::int64_t window = 0;          // causal only. 0: full causal; w > 0: keys i − w < j ≤ i
  bool entropy_output = false;      // compute the differentiable per-row entropy output
  bool modulation_entropy = false;  // compute the differentiable Σ h(σ(·)) output (modulation terms only)
  bool modulation_sum = false;      // compute the differentiable Σ G output (modulation terms only)
  AttentionStats* stats = nullptr;  // filled (added to) when non-null
  // i32 [B, Tq] on q's device: 1 = compute query row i of every head of sequence b, 0 = skip it.
  // Undefined: every row is active.
  Tensor active_queries;
  // θ in [0, 1) of adaptive computation pruning (above): 0 = off; causal only. The fused kernels
  // (CPU, and CUDA's for the head dims it fuses) prune; the composed CUDA fallback computes every
  // entry.
  double prune_threshold = 0;
};

struct AttentionResult {
  Tensor out;                 // [B, H, Tq, d]
  Tensor row_entropy;         // [B, H, Tq]: −Σ_j A_ij ln A_ij (defined when entropy_output)
  Tensor modulation_entropy;  // [B, H]: Σ_ij h(G_ij), G = σ(u), h the binary entropy (when modulation_entropy)
  Tensor modulation_sum;      // [B, H]: Σ_ij G_ij, the soft G (when modulation_sum)
};

// q: [B, H, Tq, d]; k, v: [B, H_kv, Tk, d], one shape, H_kv dividing H (H_kv = H: multi-head
// attention; fewer: grouped-query, above) and Tk = Tq when causal; f32 or f64, same dtype.
// Autograd-aware in q, k, v and every term. ShapeError naming q, k and v's shapes for k and v of
// different shapes or H_kv not dividing H; ValueError for a window without causal, a causal
// mask with Tq ≠ Tk, or a prune_threshold outside [0, 1) or with causal false.
AttentionResult flash_attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionTerms& terms = {},
                                const AttentionOptions& options = {});

// Throws ValueError unless `active` is undefined or an i32 [B, Tq] tensor on q's device (q [B, H, Tq, d]).
void check_active_queries(const Tensor& active, const Tensor& q, const char* op);

}  // namespace gattn::ops
