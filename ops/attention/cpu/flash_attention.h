// CPU kernels of the fused attention, causal or not, queries and keys of their own lengths
// (ops/attention/attention.h has the math): FlashAttention-2
// tiling with an online softmax. Forward parallelises over (batch·head, query tile); backward over
// batch·head, walking key tiles outer and query tiles inner so dK, dV and dQ of one head are owned
// by one thread (no atomics, deterministic). Tile products go through cpu::blas_gemm (OpenBLAS's
// small-matrix kernels, single-threaded inside our parallel region).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/tensor/philox.h"
#include "ops/attention/attention.h"
#include "ops/cpu/fast_math.h"
#include "ops/cpu/gemm.h"

namespace gattn::cpu {

constexpr std::int64_t kAttnTileQ = 64;
constexpr std::int64_t kAttnTileK = 64;

template <class T>
struct FlashAttentionParams {
  std::int64_t B = 0, H = 0, Tq = 0, Tk = 0, d = 0;  // queries [B, H, Tq, d], keys [B, H, Tk, d]
  bool causal = true;                                // false: every query sees every key (window 0)
  std::int64_t window = 0;                           // causal only: 0 = full causal
  T scale = 1;                                       // applied to q·k
  const T* q = nullptr;                              // [B, H, Tq, d]
  const T* k = nullptr;                              // [B, H, Tk, d], as v
  const T* v = nullptr;
  const T* row_bias = nullptr;        // [B, H, Tq] or null: r_i on every logit of row i
  const T* col_bias = nullptr;        // [B, H, Tk] or null: c_j on every logit of column j
  const T* modulation_row = nullptr;  // [B, H, Tq] or null (no modulation; then modulation_col is null too)
  const T* modulation_col = nullptr;  // [B, H, Tk]
  T alpha = 0;                        // modulation α
  T inv_tau = 1;                      // modulation 1/τ
  bool noise = false;                 // logistic noise on the modulation logits
  std::uint64_t noise_seed = 0, noise_stream = 0, noise_offset = 0;
  // A hard modulation: M uses 1[G > hard_threshold] in place of G; the gradient stays the soft G's
  // (straight-through).
  bool hard = false;
  T hard_threshold = T(0.5);
  const std::int32_t* active = nullptr;  // [B, Tq] or null (every query row active): 0 skips row i of sequence b
};

// Forward outputs. out/lse always; the rest may be null when not wanted. Skipped query rows get
// out = 0, lse = 0 and zero row statistics.
template <class T>
struct FlashForwardOutputs {
  T* out = nullptr;          // [B, H, Tq, d]
  T* lse = nullptr;          // [B, H, Tq]: L_i = log Σ_j exp(S_ij)
  T* row_entropy = nullptr;  // [B, H, Tq]: −Σ_j A_ij ln A_ij
  T* row_asum = nullptr;     // [B, H, Tq]: Σ_j A_ij (1 without modulation); needed with row_entropy for backward
  T* row_sink = nullptr;     // [B, H, Tq]: A_i0 (0 where key 0 is outside the window)
  T* modulation_entropy = nullptr;                 // [B, H]: Σ h(G_ij) over visible entries of active rows
  ops::GateMoments* modulation_moments = nullptr;  // [B·H·query tiles] partial moments of G (merged by the caller)
};

template <class T>
struct FlashBackwardInputs {
  const T* out = nullptr;  // saved forward output
  const T* lse = nullptr;
  const T* d_out = nullptr;          // [B, H, Tq, d] or null (no gradient reached the output)
  const T* d_row_entropy = nullptr;  // [B, H, Tq] or null
  const T* row_entropy = nullptr;    // saved, needed with d_row_entropy
  const T* row_asum = nullptr;
  const T* d_modulation_entropy = nullptr;  // [B, H] or null
};

// Gradients; each pointer may be null when not needed. All are overwritten (zeroed first).
template <class T>
struct FlashBackwardOutputs {
  T* dq = nullptr;
  T* dk = nullptr;
  T* dv = nullptr;
  T* d_row_bias = nullptr;
  T* d_col_bias = nullptr;
  T* d_modulation_row = nullptr;
  T* d_modulation_col = nullptr;
  T* d_alpha_partial = nullptr;  // [B·H] partial sums of dL/dα (α's value); summed in order by the caller
};

namespace attn_detail {

// Query i sees keys [first_key, end_key): causal j ≤ i (and i − j < window), else all Tk keys.
template <class T>
std::int64_t first_key(const FlashAttentionParams<T>& p, std::int64_t i) {
  return p.causal && p.window > 0 ? std::max<std::int64_t>(0, i - p.window + 1) : 0;
}
template <class T>
std::int64_t end_key(const FlashAttentionParams<T>& p, std::int64_t i) {
  return p.causal ? i + 1 : p.Tk;
}

template <class T>
T sigmoid(T z) {
  return z >= 0 ? T(1) / (T(1) + std::exp(-z)) : std::exp(z) / (T(1) + std::exp(z));
}

// log σ(z), stable for large |z|.
template <class T>
T log_sigmoid(T z) {
  return z >= 0 ? -std::log1p(std::exp(-z)) : z - std::log1p(std::exp(z));
}

// Logistic noise of entry (b·h, i, j): ln u − ln(1 − u) with u in (0, 1) from one Philox word. The
// word depends on the true (b·h, i, j) only, so skipping rows or compacting them changes no draw.
template <class T>
T logistic_noise(const FlashAttentionParams<T>& p, std::int64_t bh, std::int64_t i, std::int64_t j) {
  std::uint64_t word = p.noise_offset + static_cast<std::uint64_t>((bh * p.Tq + i) * p.Tk + j);
  Philox4 r = philox_block(p.noise_seed, p.noise_stream, word / 4);
  double u = (static_cast<double>(r.v[word % 4] >> 8) + 0.5) * (1.0 / 16777216.0);
  return static_cast<T>(std::log(u) - std::log1p(-u));
}

// The modulation's pre-activation u_ij = (a_i + b_j + n_ij)/τ for one (i, j).
template <class T>
T modulation_logit(const FlashAttentionParams<T>& p, std::int64_t bh, std::int64_t i, std::int64_t j) {
  T z = p.modulation_row[bh * p.Tq + i] + p.modulation_col[bh * p.Tk + j];
  if (p.noise) z += logistic_noise(p, bh, i, j);
  return z * p.inv_tau;
}

// The gate value the modulation applies: G, or 1[G > θ] for a hard modulation.
template <class T>
T applied_gate(const FlashAttentionParams<T>& p, T G) {
  return p.hard ? (G > p.hard_threshold ? T(1) : T(0)) : G;
}

// Fills S[r, c] (query rows pos[0..rows), key columns j0..) with the full logits scale·q·k + c_j + r_i.
// q_rows holds those query rows contiguously (stride d): the head's own rows for a whole tile, or
// a compact copy of a tile's active rows; pos[r] is row r's true position (the bias index).
// Invisible entries are left as they are (callers only read visible ones).
template <class T>
void tile_logits(const FlashAttentionParams<T>& p, std::int64_t bh, const T* q_rows, const std::int64_t* pos,
                 std::int64_t rows, std::int64_t j0, std::int64_t cols, T* S) {
  const std::int64_t d = p.d, base = bh * p.Tq, kbase = bh * p.Tk;
  blas_gemm<T>({.trans_b = true,
                .M = rows,
                .N = cols,
                .K = d,
                .alpha = p.scale,
                .A = q_rows,
                .lda = d,
                .B = p.k + (kbase + j0) * d,
                .ldb = d,
                .C = S,
                .ldc = kAttnTileK});
  if (!p.row_bias && !p.col_bias) return;
  for (std::int64_t r = 0; r < rows; ++r) {
    T* row = S + r * kAttnTileK;
    const T ri = p.row_bias ? p.row_bias[base + pos[r]] : T(0);
    for (std::int64_t c = 0; c < cols; ++c) {
      T add = 0;
      if (p.col_bias) add += p.col_bias[kbase + j0 + c];
      if (p.row_bias) add += ri;
      row[c] += add;
    }
  }
}

// Binary entropy h(G) of G = σ(u): −G ln G − (1−G) ln(1−G), from u for stability.
template <class T>
T binary_entropy_from_logit(T u, T G) {
  return -(G * log_sigmoid(u) + (T(1) - G) * log_sigmoid(-u));
}

// Whether query row i of head bh is computed (p.active null: all rows).
template <class T>
bool row_active(const FlashAttentionParams<T>& p, std::int64_t bh, std::int64_t i) {
  return !p.active || p.active[(bh / p.H) * p.Tq + i] != 0;
}

// The active rows of query tile [i0, i0 + rows) of head bh: their true positions into pos; returns
// how many.
template <class T>
std::int64_t active_rows(const FlashAttentionParams<T>& p, std::int64_t bh, std::int64_t i0, std::int64_t rows,
                         std::int64_t* pos) {
  std::int64_t n = 0;
  for (std::int64_t i = i0; i < i0 + rows; ++i)
    if (row_active(p, bh, i)) pos[n++] = i;
  return n;
}

}  // namespace attn_detail

// Forward. Each (head, query tile) task works on the tile's active rows only: all of them take the
// tile's own rows in place; some of them are first copied into a compact tile (their positions
// kept for the mask, the key range, the row bias and the noise) and the results scattered back, so
// the cost follows the number of active rows; a tile with none is just zeroed.
template <class T>
void flash_attention_forward(const FlashAttentionParams<T>& p, const FlashForwardOutputs<T>& o) {
  using namespace attn_detail;
  const std::int64_t Tn = p.Tq, Tk = p.Tk, d = p.d, BH = p.B * p.H;
  const std::int64_t n_qt = (Tn + kAttnTileQ - 1) / kAttnTileQ;
  const bool modulated = p.modulation_row != nullptr;
  const bool want_entropy = o.row_entropy != nullptr;
  // The modulated case that training steps take (no noise, no statistics): its vectorised loop.
  const bool fast_modulation = std::is_same_v<T, float> && modulated && !p.noise && !p.hard && !o.modulation_moments &&
                               !o.modulation_entropy && !want_entropy;
  const T neg_inf = -std::numeric_limits<T>::infinity();
  // Per-task partial modulation-entropy sums, added per head in task order (deterministic).
  std::vector<T> mod_entropy_partial(o.modulation_entropy ? static_cast<std::size_t>(BH * n_qt) : 0, T(0));

  // Threads only when there are several tiles and enough work to pay for the team.
  const bool parallel_fwd = BH * n_qt > 1 && worth_parallel(BH * Tn * Tk * d / (p.causal ? 2 : 1));
#pragma omp parallel if (parallel_fwd)
  {
    std::vector<T> S(kAttnTileQ * kAttnTileK), W(kAttnTileQ * kAttnTileK), acc(kAttnTileQ * d);
    std::vector<T> m(kAttnTileQ), l(kAttnTileQ), e1(kAttnTileQ), e0(kAttnTileQ), s0(kAttnTileQ), M0(kAttnTileQ);
    std::vector<std::int64_t> pos(kAttnTileQ);
    std::vector<T> q_compact;  // the active rows of a partly active tile
#pragma omp for collapse(2) schedule(dynamic)
    for (std::int64_t bh = 0; bh < BH; ++bh) {
      for (std::int64_t qt = 0; qt < n_qt; ++qt) {
        const std::int64_t i0 = qt * kAttnTileQ, tile_rows = std::min(kAttnTileQ, Tn - i0), base = bh * Tn,
                           kbase = bh * Tk;
        const std::int64_t rows = active_rows(p, bh, i0, tile_rows, pos.data());
        const T* q_rows = p.q + (base + i0) * d;
        if (rows < tile_rows) {
          // Skipped rows: zero output and statistics, no work.
          for (std::int64_t i = i0; i < i0 + tile_rows; ++i) {
            if (row_active(p, bh, i)) continue;
            std::fill(o.out + (base + i) * d, o.out + (base + i + 1) * d, T(0));
            o.lse[base + i] = 0;
            if (o.row_entropy) o.row_entropy[base + i] = 0;
            if (o.row_asum) o.row_asum[base + i] = 0;
            if (o.row_sink) o.row_sink[base + i] = 0;
          }
          if (rows == 0) {
            if (o.modulation_moments) o.modulation_moments[bh * n_qt + qt] = ops::GateMoments{};
            continue;  // the partial entropy sum stays 0
          }
          q_compact.resize(static_cast<std::size_t>(rows * d));
          for (std::int64_t r = 0; r < rows; ++r)
            std::copy_n(p.q + (base + pos[static_cast<std::size_t>(r)]) * d, d, q_compact.data() + r * d);
          q_rows = q_compact.data();
        }
        std::fill(m.begin(), m.end(), neg_inf);
        std::fill(l.begin(), l.end(), T(0));
        std::fill(e1.begin(), e1.end(), T(0));
        std::fill(e0.begin(), e0.end(), T(0));
        std::fill(s0.begin(), s0.end(), neg_inf);
        std::fill(M0.begin(), M0.end(), T(1));
        std::fill(acc.begin(), acc.begin() + rows * d, T(0));
        ops::GateMoments moments;
        T mod_ent = 0;
        // Keys [j_lo, j_hi) cover every active row's visible keys.
        const std::int64_t j_lo = first_key(p, pos[0]), j_hi = end_key(p, pos[static_cast<std::size_t>(rows - 1)]);
        for (std::int64_t j0 = j_lo / kAttnTileK * kAttnTileK; j0 < j_hi; j0 += kAttnTileK) {
          const std::int64_t cols = std::min(kAttnTileK, Tk - j0);
          tile_logits(p, bh, q_rows, pos.data(), rows, j0, cols, S.data());
          for (std::int64_t r = 0; r < rows; ++r) {
            const std::int64_t i = pos[static_cast<std::size_t>(r)];
            const std::int64_t c_lo = std::max<std::int64_t>(first_key(p, i) - j0, 0);
            const std::int64_t c_hi = std::min<std::int64_t>(end_key(p, i) - j0, cols);
            T* srow = S.data() + r * kAttnTileK;
            T* wrow = W.data() + r * kAttnTileK;
            if (c_lo >= c_hi) {  // no visible key of this row in this tile
              std::fill(wrow, wrow + cols, T(0));
              continue;
            }
            T tile_max = neg_inf;
#pragma omp simd reduction(max : tile_max)
            for (std::int64_t c = c_lo; c < c_hi; ++c) tile_max = std::max(tile_max, srow[c]);
            const T m_new = std::max(m[r], tile_max);
            const T m_old = m[r];
            const T corr = std::exp(m_old - m_new);  // 0 on the row's first tile (m = −inf)
            m[r] = m_new;
            T row_l = 0, row_e1 = 0, row_e0 = 0;
            std::fill(wrow, wrow + c_lo, T(0));
            if (!modulated) {
              // The common case, branch-free so it vectorises: w = P up to the row's scale.
#pragma omp simd reduction(+ : row_l)
              for (std::int64_t c = c_lo; c < c_hi; ++c) {
                const T w = vexp(srow[c] - m_new);
                wrow[c] = w;
                row_l += w;
              }
              if (want_entropy) {
                // ln A = (S − m) − ln l; S − m stays small, so f32 keeps its precision, and the
                // − ln l part is applied at the end with the final l. (S is finite: w·(S − m) = 0
                // where w underflows.)
#pragma omp simd reduction(+ : row_e1)
                for (std::int64_t c = c_lo; c < c_hi; ++c) row_e1 += wrow[c] * (srow[c] - m_new);
                row_e0 = row_l;
              }
            } else if (fast_modulation) {
              // f32 without noise, statistics or entropies: the modulation branch-free so it
              // vectorises (σ through fast_exp; the general loop below uses std::exp).
              if constexpr (std::is_same_v<T, float>) {
                const float a_i = p.modulation_row[base + i], alpha = p.alpha, keep = 1.0f - p.alpha;
                const float* b = p.modulation_col + kbase + j0;
#pragma omp simd reduction(+ : row_l)
                for (std::int64_t c = c_lo; c < c_hi; ++c) {
                  const float pij = vexp(srow[c] - m_new);
                  row_l += pij;
                  wrow[c] = pij * (alpha * vsigmoid((a_i + b[c]) * p.inv_tau) + keep);
                }
              }
            } else {
              for (std::int64_t c = c_lo; c < c_hi; ++c) {
                const T pij = vexp(srow[c] - m_new);
                row_l += pij;
                const T u = modulation_logit(p, bh, i, j0 + c);
                const T G = sigmoid(u), Gv = applied_gate(p, G);
                const T M = p.alpha * Gv + (T(1) - p.alpha);
                if (o.modulation_moments) moments.add(static_cast<double>(Gv));
                if (o.modulation_entropy) mod_ent += binary_entropy_from_logit(u, G);
                const T w = pij * M;
                wrow[c] = w;
                if (want_entropy && w > T(0)) {  // 0·ln 0 = 0: an entry with no weight adds nothing
                  row_e0 += w;
                  row_e1 += w * ((srow[c] - m_new) + std::log(M));  // ln A = (S − m) − ln l + ln M
                }
              }
            }
            if (j0 == 0 && c_lo == 0) {  // key 0 is visible: remember its logit and modulation for the sink
              s0[r] = srow[0];
              M0[r] = modulated ? p.alpha * applied_gate(p, sigmoid(modulation_logit(p, bh, i, 0))) + (T(1) - p.alpha)
                                : T(1);
            }
            std::fill(wrow + c_hi, wrow + cols, T(0));
            // e1 is kept relative to the running max: moving the max from m to m' rescales by corr
            // and shifts each (S − m) by (m − m'), i.e. adds (m − m')·e0 before rescaling.
            if (corr != T(0)) e1[r] = corr * (e1[r] + (m_old - m_new) * e0[r]);
            e1[r] += row_e1;
            e0[r] = e0[r] * corr + row_e0;
            l[r] = l[r] * corr + row_l;
            if (corr != T(1))
              for (std::int64_t x = 0; x < d; ++x) acc[r * d + x] *= corr;
          }
          // acc += W · V for this key tile.
          blas_gemm<T>({.M = rows,
                        .N = d,
                        .K = cols,
                        .A = W.data(),
                        .lda = kAttnTileK,
                        .B = p.v + (kbase + j0) * d,
                        .ldb = d,
                        .beta = T(1),
                        .C = acc.data(),
                        .ldc = d});
        }
        for (std::int64_t r = 0; r < rows; ++r) {
          const std::int64_t i = pos[static_cast<std::size_t>(r)];
          const T log_l = std::log(l[r]);
          const T L = m[r] + log_l;
          const T inv_l = T(1) / l[r];
          T* out_row = o.out + (base + i) * d;
          for (std::int64_t x = 0; x < d; ++x) out_row[x] = acc[r * d + x] * inv_l;
          o.lse[base + i] = L;
          if (want_entropy) {
            const T asum = e0[r] * inv_l;
            o.row_entropy[base + i] = log_l * asum - e1[r] * inv_l;
            if (o.row_asum) o.row_asum[base + i] = asum;
          }
          if (o.row_sink) o.row_sink[base + i] = s0[r] == neg_inf ? T(0) : std::exp(s0[r] - L) * M0[r];
        }
        if (o.modulation_moments) o.modulation_moments[bh * n_qt + qt] = moments;
        if (o.modulation_entropy) mod_entropy_partial[static_cast<std::size_t>(bh * n_qt + qt)] = mod_ent;
      }
    }
  }
  if (o.modulation_entropy)
    for (std::int64_t bh = 0; bh < BH; ++bh) {
      T s = 0;
      for (std::int64_t qt = 0; qt < n_qt; ++qt) s += mod_entropy_partial[static_cast<std::size_t>(bh * n_qt + qt)];
      o.modulation_entropy[bh] = s;
    }
}

// Backward. With A = P ⊙ M, y = A v, H_i = −Σ_j A_ij ln A_ij and E = Σ h(G_ij):
//   dA_ij = dO_i·v_j − dH_i (ln A_ij + 1)                         (entropy output's gradient)
//   dv_j  = Σ_i A_ij dO_i
//   dP = dA ⊙ M,  dM = dA ⊙ P
//   D_i = Σ_j P_ij dP_ij = rowsum(dO ∘ O)_i + dH_i (H_i − Σ_j A_ij)  (so only O(T) is saved)
//   dS_ij = P_ij (dP_ij − D_i)
//   dq_i = scale Σ_j dS_ij k_j,  dk_j = scale Σ_i dS_ij q_i
//   d row_bias_i = Σ_j dS_ij,  d col_bias_j = Σ_i dS_ij
//   modulation (M = αG + 1 − α, G = σ(u), u = (a_i + b_j + n)/τ):
//     du_ij = (α dM_ij − dE · u_ij) G(1−G)    (dh/du = −u G(1−G));  da_i = Σ_j du_ij/τ, db_j = Σ_i du_ij/τ
//     dα = Σ_ij dM_ij (G − 1)
//   hard (M = α·1[G > θ] + 1 − α): the same du with the soft G (straight-through), dα with 1[G > θ]
// Skipped query rows take no part: their d_out is never read and their dq rows stay 0. A query
// tile with some active rows works on a compact copy of those rows' q and dO (gathered once per
// head), its dq accumulated compactly and scattered back at the end.
template <class T>
void flash_attention_backward(const FlashAttentionParams<T>& p, const FlashBackwardInputs<T>& in,
                              const FlashBackwardOutputs<T>& g) {
  using namespace attn_detail;
  const std::int64_t Tn = p.Tq, Tk = p.Tk, d = p.d, BH = p.B * p.H;
  const bool modulated = p.modulation_row != nullptr;
  const bool fast_modulation = std::is_same_v<T, float> && modulated && !p.noise && !p.hard;  // and no dH (per row)
  const std::int64_t n_kt = (Tk + kAttnTileK - 1) / kAttnTileK;
  const std::int64_t n_qt = (Tn + kAttnTileQ - 1) / kAttnTileQ;

  const bool parallel_bwd = BH > 1 && worth_parallel(BH * Tn * Tk * d);
#pragma omp parallel if (parallel_bwd)
  {
    std::vector<T> S(kAttnTileQ * kAttnTileK), A(kAttnTileQ * kAttnTileK);
    std::vector<T> dA(kAttnTileQ * kAttnTileK), dS(kAttnTileQ * kAttnTileK);
    std::vector<T> D(static_cast<std::size_t>(Tn));
    std::vector<T> dq_local, dk_local, dv_local;
    // This head's active rows: positions, where each query tile's run starts and how long it is,
    // and for partly active tiles the compact q, dO and dq rows (indexed like `pos`).
    std::vector<std::int64_t> pos(static_cast<std::size_t>(Tn)), tile_off(static_cast<std::size_t>(n_qt)),
        tile_n(static_cast<std::size_t>(n_qt));
    std::vector<T> q_compact, do_compact, dq_compact;
#pragma omp for schedule(dynamic)
    for (std::int64_t bh = 0; bh < BH; ++bh) {
      const std::int64_t base = bh * Tn, kbase = bh * Tk;
      // Gradients of q, k, v are written to the outputs when wanted, else to scratch (the other
      // terms still need dS).
      // `rows_base` is the head's first row (bh·Tq for dq, bh·Tk for dk and dv).
      auto target = [&](T* out, std::vector<T>& local, std::int64_t rows_base, std::int64_t n) -> T* {
        if (out) {
          std::fill(out + rows_base * d, out + rows_base * d + n, T(0));
          return out + rows_base * d;
        }
        local.assign(static_cast<std::size_t>(n), T(0));
        return local.data();
      };
      T* dq = target(g.dq, dq_local, base, Tn * d);
      T* dk = target(g.dk, dk_local, kbase, Tk * d);
      T* dv = target(g.dv, dv_local, kbase, Tk * d);
      if (g.d_row_bias) std::fill(g.d_row_bias + base, g.d_row_bias + base + Tn, T(0));
      if (g.d_col_bias) std::fill(g.d_col_bias + kbase, g.d_col_bias + kbase + Tk, T(0));
      if (g.d_modulation_row) std::fill(g.d_modulation_row + base, g.d_modulation_row + base + Tn, T(0));
      if (g.d_modulation_col) std::fill(g.d_modulation_col + kbase, g.d_modulation_col + kbase + Tk, T(0));
      T d_alpha = 0;
      const T dE = in.d_modulation_entropy ? in.d_modulation_entropy[bh] : T(0);

      std::int64_t n_active = 0;
      bool any_partial = false;
      for (std::int64_t qt = 0; qt < n_qt; ++qt) {
        const std::int64_t i0 = qt * kAttnTileQ, tile_rows = std::min(kAttnTileQ, Tn - i0);
        tile_off[static_cast<std::size_t>(qt)] = n_active;
        const std::int64_t n = active_rows(p, bh, i0, tile_rows, pos.data() + n_active);
        tile_n[static_cast<std::size_t>(qt)] = n;
        n_active += n;
        any_partial = any_partial || (n > 0 && n < tile_rows);
      }
      if (n_active == 0) {
        if (g.d_alpha_partial) g.d_alpha_partial[bh] = 0;
        continue;
      }
      if (any_partial) {
        q_compact.resize(static_cast<std::size_t>(n_active * d));
        dq_compact.assign(static_cast<std::size_t>(n_active * d), T(0));
        if (in.d_out) do_compact.resize(static_cast<std::size_t>(n_active * d));
        for (std::int64_t a = 0; a < n_active; ++a) {
          const std::int64_t i = pos[static_cast<std::size_t>(a)];
          std::copy_n(p.q + (base + i) * d, d, q_compact.data() + a * d);
          if (in.d_out) std::copy_n(in.d_out + (base + i) * d, d, do_compact.data() + a * d);
        }
      }

      for (std::int64_t a = 0; a < n_active; ++a) {
        const std::int64_t i = pos[static_cast<std::size_t>(a)];
        T dot = 0;
        if (in.d_out)
          for (std::int64_t x = 0; x < d; ++x) dot += in.d_out[(base + i) * d + x] * in.out[(base + i) * d + x];
        if (in.d_row_entropy) dot += in.d_row_entropy[base + i] * (in.row_entropy[base + i] - in.row_asum[base + i]);
        D[static_cast<std::size_t>(i)] = dot;
      }

      for (std::int64_t kt = 0; kt < n_kt; ++kt) {
        const std::int64_t j0 = kt * kAttnTileK, cols = std::min(kAttnTileK, Tk - j0);
        // Queries that can see some key of this tile: causal, i ≥ j0 and i − w < j0 + cols; else all.
        const std::int64_t i_lo = p.causal ? j0 / kAttnTileQ * kAttnTileQ : 0;
        const std::int64_t i_hi = !p.causal || p.window == 0 ? Tn : std::min(Tn, j0 + cols - 1 + p.window);
        for (std::int64_t i0 = i_lo; i0 < i_hi; i0 += kAttnTileQ) {
          const std::int64_t qt = i0 / kAttnTileQ, tile_rows = std::min(kAttnTileQ, Tn - i0);
          const std::int64_t rows = tile_n[static_cast<std::size_t>(qt)], off = tile_off[static_cast<std::size_t>(qt)];
          if (rows == 0) continue;
          // The tile's own rows when all are active, else their compact copies.
          const bool whole = rows == tile_rows;
          const std::int64_t* rpos = pos.data() + off;
          const T* q_rows = whole ? p.q + (base + i0) * d : q_compact.data() + off * d;
          const T* do_rows = !in.d_out ? nullptr : whole ? in.d_out + (base + i0) * d : do_compact.data() + off * d;
          T* dq_rows = whole ? dq + i0 * d : dq_compact.data() + off * d;
          tile_logits(p, bh, q_rows, rpos, rows, j0, cols, S.data());
          if (do_rows)
            blas_gemm<T>({.trans_b = true,
                          .M = rows,
                          .N = cols,
                          .K = d,
                          .A = do_rows,
                          .lda = d,
                          .B = p.v + (kbase + j0) * d,
                          .ldb = d,
                          .C = dA.data(),
                          .ldc = kAttnTileK});
          else
            std::fill(dA.begin(), dA.end(), T(0));
          bool any = false;
          for (std::int64_t r = 0; r < rows; ++r) {
            const std::int64_t i = rpos[r];
            const T L = in.lse[base + i];
            const T dH = in.d_row_entropy ? in.d_row_entropy[base + i] : T(0);
            const T Di = D[static_cast<std::size_t>(i)];
            T* srow = S.data() + r * kAttnTileK;
            T* arow = A.data() + r * kAttnTileK;
            T* darow = dA.data() + r * kAttnTileK;
            T* dsrow = dS.data() + r * kAttnTileK;
            T d_row = 0;  // Σ_j du_ij for the modulation's row term
            T ds_row = 0;
            // Visible keys of query i in this tile: columns [c_lo, c_hi); the rest contribute 0.
            const std::int64_t c_lo = std::max<std::int64_t>(first_key(p, i) - j0, 0);
            const std::int64_t c_hi = std::min<std::int64_t>(end_key(p, i) - j0, cols);
            if (c_lo >= c_hi) {
              std::fill(arow, arow + cols, T(0));
              std::fill(dsrow, dsrow + cols, T(0));
              continue;
            }
            any = true;
            std::fill(arow, arow + c_lo, T(0));
            std::fill(dsrow, dsrow + c_lo, T(0));
            std::fill(arow + c_hi, arow + cols, T(0));
            std::fill(dsrow + c_hi, dsrow + cols, T(0));
            if (!modulated) {
              // Branch-free so it vectorises. Where P underflows to 0, dS is 0 whatever dA is.
#pragma omp simd reduction(+ : ds_row)
              for (std::int64_t c = c_lo; c < c_hi; ++c) {
                const T pij = vexp(srow[c] - L);
                const T da = darow[c] - dH * ((srow[c] - L) + T(1));
                arow[c] = pij;
                const T ds = pij * (da - Di);
                dsrow[c] = ds;
                ds_row += ds;
              }
            } else if (fast_modulation && dH == T(0)) {
              // f32 without noise or a row-entropy gradient: branch-free so it vectorises (see the
              // forward); d_alpha is summed per row, so its rounding differs from the loop below.
              if constexpr (std::is_same_v<T, float>) {
                const float a_i = p.modulation_row[base + i], alpha = p.alpha, keep = 1.0f - p.alpha;
                const float* b = p.modulation_col + kbase + j0;
                float* dcol = g.d_modulation_col ? g.d_modulation_col + kbase + j0 : nullptr;
                float* du_row = dA.data() + r * kAttnTileK;  // dA's row is read here for the last time
                float row_alpha = 0;
#pragma omp simd reduction(+ : ds_row, d_row, row_alpha)
                for (std::int64_t c = c_lo; c < c_hi; ++c) {
                  const float pij = vexp(srow[c] - L);
                  const float u = (a_i + b[c]) * p.inv_tau;
                  const float G = vsigmoid(u);
                  const float M = alpha * G + keep;
                  const float da = darow[c];
                  arow[c] = pij * M;
                  const float ds = pij * (da * M - Di);
                  dsrow[c] = ds;
                  ds_row += ds;
                  const float dM = da * pij;
                  row_alpha += dM * (G - 1.0f);
                  const float du = (alpha * dM - dE * u) * G * (1.0f - G) * p.inv_tau;
                  d_row += du;
                  du_row[c] = du;
                }
                d_alpha += row_alpha;
                if (dcol)
                  for (std::int64_t c = c_lo; c < c_hi; ++c) dcol[c] += du_row[c];
              }
            } else {
              for (std::int64_t c = c_lo; c < c_hi; ++c) {
                const std::int64_t j = j0 + c;
                const T pij = vexp(srow[c] - L);
                const T u = modulation_logit(p, bh, i, j);
                const T G = sigmoid(u), Gv = applied_gate(p, G);
                const T M = p.alpha * Gv + (T(1) - p.alpha);
                const T a = pij * M;
                T da = darow[c];
                if (dH != T(0) && a > T(0)) da -= dH * ((srow[c] - L) + std::log(M) + T(1));
                arow[c] = a;
                const T ds = pij * (da * M - Di);
                dsrow[c] = ds;
                ds_row += ds;
                const T dM = da * pij;
                d_alpha += dM * (Gv - T(1));
                const T du = (p.alpha * dM - dE * u) * G * (T(1) - G) * p.inv_tau;
                d_row += du;
                if (g.d_modulation_col) g.d_modulation_col[kbase + j] += du;
              }
            }
            if (g.d_col_bias)
              for (std::int64_t c = c_lo; c < c_hi; ++c) g.d_col_bias[kbase + j0 + c] += dsrow[c];
            if (g.d_modulation_row) g.d_modulation_row[base + i] += d_row;
            if (g.d_row_bias) g.d_row_bias[base + i] += ds_row;
          }
          if (!any) continue;
          // dv += Aᵀ dO; dq += scale dS k; dk += scale dSᵀ q.
          if (do_rows)
            blas_gemm<T>({.trans_a = true,
                          .M = cols,
                          .N = d,
                          .K = rows,
                          .A = A.data(),
                          .lda = kAttnTileK,
                          .B = do_rows,
                          .ldb = d,
                          .beta = T(1),
                          .C = dv + j0 * d,
                          .ldc = d});
          blas_gemm<T>({.M = rows,
                        .N = d,
                        .K = cols,
                        .alpha = p.scale,
                        .A = dS.data(),
                        .lda = kAttnTileK,
                        .B = p.k + (kbase + j0) * d,
                        .ldb = d,
                        .beta = T(1),
                        .C = dq_rows,
                        .ldc = d});
          blas_gemm<T>({.trans_a = true,
                        .M = cols,
                        .N = d,
                        .K = rows,
                        .alpha = p.scale,
                        .A = dS.data(),
                        .lda = kAttnTileK,
                        .B = q_rows,
                        .ldb = d,
                        .beta = T(1),
                        .C = dk + j0 * d,
                        .ldc = d});
        }
      }
      if (any_partial)
        for (std::int64_t qt = 0; qt < n_qt; ++qt) {
          const std::int64_t i0 = qt * kAttnTileQ, tile_rows = std::min(kAttnTileQ, Tn - i0);
          const std::int64_t n = tile_n[static_cast<std::size_t>(qt)], off = tile_off[static_cast<std::size_t>(qt)];
          if (n == 0 || n == tile_rows) continue;  // whole tiles accumulated in place
          for (std::int64_t a = off; a < off + n; ++a)
            std::copy_n(dq_compact.data() + a * d, d, dq + pos[static_cast<std::size_t>(a)] * d);
        }
      if (g.d_alpha_partial) g.d_alpha_partial[bh] = d_alpha;
    }
  }
}

}  // namespace gattn::cpu
