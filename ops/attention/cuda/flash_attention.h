// Host entries of the fused flash-attention CUDA kernels (flash_attention_fwd.cu,
// flash_attention_bwd.cu), the GPU twins of ops/attention/cpu/flash_attention.h with the same math
// (ops/attention/attention.h) and the same Philox word per (b·h, i, j) for the modulation's noise.
//
// q, out, d_out, dq are [B, H, Tq, d] and k, v, dk, dv [B, H_kv, Tk, d] device arrays of one
// element type, bf16 or f32, with H_kv dividing H (grouped-query attention: query head h reads
// key/value head h / (H / H_kv); H_kv = H is plain multi-head attention);
// f32 operands are rounded to bf16 as they are staged into shared memory (the products run on bf16
// tensor cores with f32 accumulation either way), which is what autocast asks of f32 tensors. The
// bias and modulation terms, lse, row statistics and those terms' gradients are f32 and per query
// head: [B, H, Tq] for the row ones, [B, H, Tk] for the column ones.
// Head dims 16, 32, 64 and 128 (flash_head_dim_supported); callers fall back to the composed
// attention otherwise. CUDA builds only.
//
// Skipped query rows (FlashParams::active): the forward writes 0 to their output, lse and row
// statistics, the backward reads none of their d_out and writes 0 to their dq; blocks of queries
// without an active row return at once.
//
// Adaptive computation pruning (FlashParams::prune_threshold > 0, causal only): both entry points
// first build the tile plan (flash_prune_plan, the bound of ops/attention/prune_plan.h) from the
// inputs, the same one each time, and every kernel passes over the (64-query, 64-key) pairs it
// skips, whatever inner tiles it walks.
#pragma once
#include <cstdint>

struct CUstream_st;

namespace gattn::cuda {

enum class FlashElem { bf16, f32 };

bool flash_head_dim_supported(long long d);

struct FlashParams {
  long long B = 0, H = 0, Tq = 0, Tk = 0, d = 0;  // queries [B, H, Tq, d], keys [B, H_kv, Tk, d]
  long long H_kv = 0;                             // key/value heads: divides H (check_grid refuses other values)
  bool causal = true;                             // false: every query sees all Tk keys (window 0); true needs Tq = Tk
  long long window = 0;                           // causal only. 0 = full causal; w > 0: keys i − w < j ≤ i
  float scale = 1;                                // applied to q·k
  FlashElem elem = FlashElem::bf16;
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const float* row_bias = nullptr;        // r_i on every logit of row i, or null
  const float* col_bias = nullptr;        // c_j on every logit of column j, or null
  const float* modulation_row = nullptr;  // null: no modulation (then modulation_col is ignored)
  const float* modulation_col = nullptr;
  float alpha = 0;                       // modulation α
  const float* alpha_by_head = nullptr;  // [H] or null: α per query head (then `alpha` is unused)
  float inv_tau = 1;                     // modulation 1/τ
  bool hard = false;                     // M uses 1[G > hard_threshold] (forward), the soft G's gradient (backward)
  float hard_threshold = 0.5f;
  bool noise = false;
  std::uint64_t noise_seed = 0, noise_stream = 0, noise_offset = 0;
  bool softplus = false;  // G = softplus(u) = log(1 + eᵘ) instead of σ(u)
  // Modulation dropout: entry (bh, i, j) reads G = 1 when the uniform of word
  // dropout_offset + (bh·Tq + i)·Tk + j is below `dropout` (the CPU kernel's draw). 0: off.
  float dropout = 0;
  std::uint64_t dropout_seed = 0, dropout_stream = 0, dropout_offset = 0;
  const std::int32_t* active = nullptr;  // [B, Tq]: 0 skips query row i of sequence b; null: all rows active
  double prune_threshold = 0;            // θ of adaptive computation pruning (causal only); 0 = off
  // The plan [B·H, query tiles, key tiles] of ops/attention/prune_plan.h, or null: set by the entry
  // points below when they prune, for their kernels.
  const std::uint8_t* tile_plan = nullptr;
};

// Partial moments of the modulation's G over one query block of one head (merged in order by the op).
struct FlashMoments {
  double sum, sum_sq;
  long long count, below_0_1, above_0_9;
};

// Query blocks per head of the forward: the length of the per-head moments partials (T = Tq).
long long flash_query_blocks(long long T);
// Key blocks per head of the backward: the length of the per-head d_alpha partials (T = Tk).
long long flash_key_blocks(long long T);

struct FlashForwardOutputs {
  void* out = nullptr;   // [B, H, Tq, d], element type of q
  float* lse = nullptr;  // [B, H, Tq]
  // Row entropy H_i = −Σ_j A_ij ln A_ij and Σ_j A_ij (both or neither; the backward of the entropy
  // output needs both). row_sink (optional, needs the other two) is A_i0 for queries that see key
  // 0, i ≥ 1 when causal and every i when not, else 0 (also 0 for i = 0 when causal and on skipped
  // rows, so its plain sum is the sink numerator).
  float* row_entropy = nullptr;
  float* row_asum = nullptr;
  float* row_sink = nullptr;
  FlashMoments* modulation_moments = nullptr;  // [B·H·flash_query_blocks(T)] or null (modulation only)
  // [B·H·flash_query_blocks(T)] or null (modulation only): each query block's Σ G_ij of the soft G
  // over its visible entries, summed per head by the op (the modulation sum output).
  float* modulation_sum_partial = nullptr;
  long long* tile_counts = nullptr;  // host [2], with pruning: += the tile pairs skipped, walked
};

struct FlashBackwardInputs {
  const void* out = nullptr;  // the forward's output
  const float* lse = nullptr;
  const void* d_out = nullptr;  // element type of q
  // The entropy output's gradient dH (or null), with the forward's row_entropy and row_asum.
  const float* d_row_entropy = nullptr;
  const float* row_entropy = nullptr;
  const float* row_asum = nullptr;
  const float* d_modulation_sum = nullptr;  // [B·H] or null: the modulation sum output's gradient
};

// dq, dk, dv required; the term gradients may be null when not wanted. Everything is overwritten.
struct FlashBackwardOutputs {
  void* dq = nullptr;
  void* dk = nullptr;
  void* dv = nullptr;
  float* d_row_bias = nullptr;        // Σ_j dS_ij
  float* d_col_bias = nullptr;        // Σ_i dS_ij
  float* d_modulation_row = nullptr;  // Σ_j du_ij
  float* d_modulation_col = nullptr;  // Σ_i du_ij
  float* d_alpha_partial = nullptr;   // [B·H·flash_key_blocks(Tk)]: dL/dα partials, summed in order by the caller
};

// The pruning plan's length in bytes (B·H·query tiles·key tiles), and the plan of p into the device
// array `plan`; `counts` (host [2], or null) += the pairs skipped and walked, read back synchronously.
long long flash_prune_plan_size(const FlashParams& p);
void flash_prune_plan(const FlashParams& p, std::uint8_t* plan, long long* counts, CUstream_st* stream);

void flash_attention_forward(const FlashParams& p, const FlashForwardOutputs& o, CUstream_st* stream);
// Deterministic: no atomics; every gradient element is written by one thread in a fixed order (dk and
// dv of a key/value head sum its group's query heads inside one block, in head order).
void flash_attention_backward(const FlashParams& p, const FlashBackwardInputs& in, const FlashBackwardOutputs& g,
                              CUstream_st* stream);

}  // namespace gattn::cuda
