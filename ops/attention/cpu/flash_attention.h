// CPU kernels of the fused attention, causal or not, queries and keys of their own lengths, key/value
// heads shared by groups of query heads or not (ops/attention/attention.h has the math):
// FlashAttention-2 tiling with an online softmax. Forward parallelises over (batch·query head,
// query tile), each task reading its key/value head in place (no copy per query head). Backward
// parallelises over units of query heads that share a key/value head (a whole group, or a part of
// one when there are few key/value heads: BackwardSplit), walking each head's key tiles outer and
// query tiles inner so its dQ and the unit's dK, dV are owned by one thread; the parts of a group
// are added in a fixed order at the end (no atomics, deterministic, the same bits for any thread
// count). Tile products go through cpu::tile_gemm (f32: a register-blocked kernel of our own, about
// twice OpenBLAS on these sizes; f64: OpenBLAS), single-threaded inside our parallel region.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/tensor/philox.h"
#include "ops/attention/attention.h"
#include "ops/attention/cpu/flash_prune.h"
#include "ops/cpu/fast_math.h"
#include "ops/cpu/tile_gemm.h"

namespace gattn::cpu {

constexpr std::int64_t kAttnTileQ = 64;
constexpr std::int64_t kAttnTileK = 64;
// The pruning plan's tiles are the kernels' own (one plan entry per tile pair the loops walk).
static_assert(kAttnTileQ == ops::kPruneTile && kAttnTileK == ops::kPruneTile);

template <class T>
struct FlashAttentionParams {
  std::int64_t B = 0, H = 0, Tq = 0, Tk = 0, d = 0;  // queries [B, H, Tq, d], keys [B, H_kv, Tk, d]
  std::int64_t H_kv = 0;                             // key/value heads, dividing H: query head h reads h / (H / H_kv)
  bool causal = true;                                // false: every query sees every key (window 0)
  std::int64_t window = 0;                           // causal only: 0 = full causal
  T scale = 1;                                       // applied to q·k
  const T* q = nullptr;                              // [B, H, Tq, d]
  const T* k = nullptr;                              // [B, H_kv, Tk, d], as v
  const T* v = nullptr;
  // The terms are per query head, [B, H, ·], whatever H_kv.
  const T* row_bias = nullptr;        // [B, H, Tq] or null: r_i on every logit of row i
  const T* col_bias = nullptr;        // [B, H, Tk] or null: c_j on every logit of column j
  const T* modulation_row = nullptr;  // [B, H, Tq] or null (no modulation; then modulation_col is null too)
  const T* modulation_col = nullptr;  // [B, H, Tk]
  T alpha = 0;                        // modulation α
  const T* alpha_by_head = nullptr;   // [H] or null: α per query head (then `alpha` is unused)
  T inv_tau = 1;                      // modulation 1/τ
  bool noise = false;                 // logistic noise on the modulation logits
  std::uint64_t noise_seed = 0, noise_stream = 0, noise_offset = 0;
  // A hard modulation: M uses 1[G > hard_threshold] in place of G; the gradient stays the soft G's
  // (straight-through).
  bool hard = false;
  T hard_threshold = T(0.5);
  bool softplus = false;  // G = softplus(u) = log(1 + eᵘ) instead of σ(u)
  // Modulation dropout: entry (b·h, i, j) reads G = 1 when the uniform of its Philox word
  // dropout_offset + (bh·Tq + i)·Tk + j is below `dropout`. 0: off.
  T dropout = 0;
  std::uint64_t dropout_seed = 0, dropout_stream = 0, dropout_offset = 0;
  const std::int32_t* active = nullptr;  // [B, Tq] or null (every query row active): 0 skips row i of sequence b
  // θ of adaptive computation pruning (causal only): tile pairs whose attention probabilities are
  // all provably below θ are skipped, forward and backward (ops/attention/prune_plan.h). 0: off.
  double prune_threshold = 0;
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
  T* modulation_sum = nullptr;                     // [B, H]: Σ G_ij (soft G) over the same entries
  ops::GateMoments* modulation_moments = nullptr;  // [B·H·query tiles] partial moments of G (merged by the caller)
  std::int64_t* tile_counts = nullptr;             // [2], with pruning: += the tile pairs skipped, walked
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
  const T* d_modulation_sum = nullptr;      // [B, H] or null
};

// Gradients; each pointer may be null when not needed. All are overwritten (zeroed first).
template <class T>
struct FlashBackwardOutputs {
  T* dq = nullptr;  // [B, H, Tq, d]
  T* dk = nullptr;  // [B, H_kv, Tk, d], as dv: summed over the key/value head's query heads
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

// A row's visible columns [lo, hi) of a key tile of `cols`, and the wider span [span_lo, span_hi)
// its vectorised loops run over: lo rounded down and hi up to multiples of kSimdSpan, within the
// tile, the columns outside [lo, hi) masked to 0 (or −inf for the max) inside the loop. GCC 12 gives
// an omp simd loop a scalar remainder (no masked epilogue), and a causal tile's rows end at every
// column, so without the span a row ran up to 15 scalar exps: about half the backward's own time at
// T = 64 (docs/benchmarks.md). 16 lanes of f32 fill an AVX-512 register, two AVX2 ones.
constexpr std::int64_t kSimdSpan = 16;
// The bounds are 32-bit (a tile has at most kAttnTileK columns) and so are the loops' counters: the
// mask is then one 32-bit compare per lane, where 64-bit counters made GCC build it from pairs of
// 64-bit compares and a shuffle per vector.
struct VisibleColumns {
  int lo = 0, hi = 0, span_lo = 0, span_hi = 0;
  bool visible(int c) const { return c >= lo && c < hi; }
  // Every column of the span is visible (every row of a tile off the causal diagonal).
  bool all_visible() const { return lo == span_lo && hi == span_hi; }
};

inline VisibleColumns visible_columns(std::int64_t lo, std::int64_t hi, std::int64_t cols) {
  const std::int64_t span_lo = lo / kSimdSpan * kSimdSpan,
                     span_hi = std::min((hi + kSimdSpan - 1) / kSimdSpan * kSimdSpan, cols);
  return {static_cast<int>(lo), static_cast<int>(hi), static_cast<int>(span_lo), static_cast<int>(span_hi)};
}

// Runs a row loop `loop(c_begin, c_end, visible)` over vc's span: unmasked (visible is constant
// true, so the compiler drops the mask) where every column of the span is visible, masked
// elsewhere. On a Zen 1 core the mask's compares and blends were about a fifth of the forward's exp
// loop, and the masked max kept its accumulator in memory; most rows of a long causal sequence lie
// off the diagonal (docs/benchmarks.md, "The row loops unmasked off the diagonal").
template <class Loop>
[[gnu::always_inline]] inline auto over_visible_columns(const VisibleColumns& vc, Loop&& loop) {
  if (vc.all_visible()) return loop(vc.lo, vc.hi, [](int) { return true; });
  return loop(vc.span_lo, vc.span_hi, [&vc](int c) { return vc.visible(c); });
}

// The rows of a causal tile on the diagonal see ever more of its columns (row r up to column r), so
// its products run in kTileRowBlocks row blocks, each over the columns its last row can see, rounded
// up to kSimdSpan (the row loops' spans read no further): on a diagonal 64 × 64 tile the four blocks
// of 16 rows take 16, 32, 48 and 64 columns, 5/8 of the full tile's work (at T = 64 every tile is
// diagonal; 4 blocks beat 2 and 8 on the attention benchmark, docs/benchmarks.md). Every entry a
// product skips is one the row loops leave unread (S, dA) or have set to 0 (A, W, dS). Off the
// diagonal, and without a causal mask, one block covers the tile.
constexpr int kTileRowBlocks = 4;
struct TileRowBlock {
  std::int64_t r0 = 0, r1 = 0, cols = 0;  // rows [r0, r1) over columns [0, cols); cols 0: no product
};
struct TileRowBlocks {
  int n = 0;
  TileRowBlock block[kTileRowBlocks];
};
// pos[r]: row r's true position (ascending).
template <class T>
TileRowBlocks tile_row_blocks(const FlashAttentionParams<T>& p, const std::int64_t* pos, std::int64_t rows,
                              std::int64_t j0, std::int64_t cols) {
  TileRowBlocks b;
  const auto seen_columns = [&](std::int64_t r1) {  // the columns rows [0, r1) see, span-rounded
    const std::int64_t hi = end_key(p, pos[r1 - 1]) - j0;
    return hi <= 0 ? std::int64_t{0} : std::min((hi + kSimdSpan - 1) / kSimdSpan * kSimdSpan, cols);
  };
  if (!p.causal || rows < kTileRowBlocks || seen_columns(rows / kTileRowBlocks) >= cols) {
    b.n = 1;
    b.block[0] = {0, rows, cols};
    return b;
  }
  b.n = kTileRowBlocks;
  for (int k = 0; k < kTileRowBlocks; ++k) {
    const std::int64_t r0 = rows * k / kTileRowBlocks, r1 = rows * (k + 1) / kTileRowBlocks;
    b.block[k] = {r0, r1, seen_columns(r1)};
  }
  return b;
}

// The modulation's α for query head bh (of B·H): one for every head, or the head's own.
template <class T>
T head_alpha(const FlashAttentionParams<T>& p, std::int64_t bh) {
  return p.alpha_by_head ? p.alpha_by_head[bh % p.H] : p.alpha;
}

// Row offset, in k and v ([B·H_kv·Tk] rows), of the key/value head that query head bh (of B·H)
// reads: batch b's query head h reads key/value head h / G (G = H / H_kv), and (b·H + h) / G is
// that head's index b·H_kv + h / G.
template <class T>
std::int64_t kv_row_base(const FlashAttentionParams<T>& p, std::int64_t bh) {
  return bh / (p.H / p.H_kv) * p.Tk;
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
  const std::uint64_t word = p.noise_offset + static_cast<std::uint64_t>((bh * p.Tq + i) * p.Tk + j);
  const double u = philox_open_uniform(p.noise_seed, p.noise_stream, word);
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

// softplus(z) = log(1 + eᶻ), stable for large |z|.
template <class T>
T softplus(T z) {
  return z > 0 ? z + std::log1p(std::exp(-z)) : std::log1p(std::exp(z));
}

// Whether modulation dropout drops entry (b·h, i, j): its own Philox word, so like the noise it
// depends on the true (b·h, i, j) only.
template <class T>
bool modulation_dropped(const FlashAttentionParams<T>& p, std::int64_t bh, std::int64_t i, std::int64_t j) {
  if (p.dropout == T(0)) return false;
  const std::uint64_t word = p.dropout_offset + static_cast<std::uint64_t>((bh * p.Tq + i) * p.Tk + j);
  return philox_open_uniform(p.dropout_seed, p.dropout_stream, word) < static_cast<double>(p.dropout);
}

// The modulation at one (i, j): u, the soft G = act(u), the applied Gv (1[G > θ] when hard, 1 where
// dropped), M = α·Gv + 1 − α, and whether the entry was kept (a dropped one passes no gradient
// through M).
template <class T>
struct ModulationAt {
  T u, G, Gv, M;
  bool kept;
};
template <class T>
ModulationAt<T> modulation_at(const FlashAttentionParams<T>& p, T alpha, std::int64_t bh, std::int64_t i,
                              std::int64_t j) {
  ModulationAt<T> m;
  m.u = modulation_logit(p, bh, i, j);
  m.G = p.softplus ? softplus(m.u) : sigmoid(m.u);
  m.kept = !modulation_dropped(p, bh, i, j);
  m.Gv = m.kept ? applied_gate(p, m.G) : T(1);
  m.M = alpha * m.Gv + (T(1) - alpha);
  return m;
}

// A key tile's rows keys[0..cols) (rows of d) as a [d, kAttnTileK] panel, panel[x, c] = keys[c, x]:
// the right-hand operand of q·kᵀ and dO·vᵀ in the layout the tile product reads in place (its rows
// contiguous), made once per key tile instead of once per product. Columns past `cols` are left
// as they are: no product reads them (a row block's columns stay within the tile's).
template <class T>
void transpose_key_tile(const T* keys, std::int64_t cols, std::int64_t d, T* panel) {
  for (std::int64_t x = 0; x < d; ++x)
    for (std::int64_t c = 0; c < cols; ++c) panel[x * kAttnTileK + c] = keys[c * d + x];
}

// C[r, c] = alpha · a_rows[r] · key c over the tile's row blocks, the keys given as their
// transposed panel (transpose_key_tile), C a tile of stride kAttnTileK: the logits q·kᵀ and the
// backward's dO·vᵀ.
template <class T>
void tile_products_with_keys(const TileRowBlocks& blocks, T alpha, const T* a_rows, const T* key_panel, std::int64_t d,
                             T* C) {
  for (int k = 0; k < blocks.n; ++k) {
    const TileRowBlock& b = blocks.block[k];
    if (b.cols == 0) continue;
    tile_gemm<T>({.M = b.r1 - b.r0,
                  .N = b.cols,
                  .K = d,
                  .alpha = alpha,
                  .A = a_rows + b.r0 * d,
                  .lda = d,
                  .B = key_panel,
                  .ldb = kAttnTileK,
                  .C = C + b.r0 * kAttnTileK,
                  .ldc = kAttnTileK});
  }
}

// The transposed direction for one row block: key_rows[c] += alpha · Σ_r tile[r, c] · rows[r] over the
// block's rows and columns (tile of stride kAttnTileK, rows of d): its term of dv += Aᵀ dO and of
// dk += scale dSᵀ q.
template <class T>
void add_block_product_to_keys(const TileRowBlock& b, T alpha, const T* tile, const T* rows, std::int64_t d,
                               T* key_rows) {
  tile_gemm<T>({.trans_a = true,
                .M = b.cols,
                .N = d,
                .K = b.r1 - b.r0,
                .alpha = alpha,
                .A = tile + b.r0 * kAttnTileK,
                .lda = kAttnTileK,
                .B = rows + b.r0 * d,
                .ldb = d,
                .beta = T(1),
                .C = key_rows,
                .ldc = d});
}

// Fills S[r, c] (query rows pos[0..rows), key columns j0..) with the full logits scale·q·k + c_j + r_i.
// q_rows holds those query rows contiguously (stride d): the head's own rows for a whole tile, or
// a compact copy of a tile's active rows; pos[r] is row r's true position (the bias index).
// Invisible entries are left as they are (callers only read visible ones), and on a causal diagonal
// tile those past a row block's columns are not computed (`blocks`: tile_row_blocks of these rows).
// key_panel: the key tile's transpose_key_tile panel.
template <class T>
void tile_logits(const FlashAttentionParams<T>& p, std::int64_t bh, const T* q_rows, const T* key_panel,
                 const std::int64_t* pos, const TileRowBlocks& blocks, std::int64_t rows, std::int64_t j0,
                 std::int64_t cols, T* S) {
  const std::int64_t d = p.d, base = bh * p.Tq, kbase = bh * p.Tk;
  tile_products_with_keys(blocks, p.scale, q_rows, key_panel, d, S);
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

// The steps below are the kernels' loop bodies, named. They are forced inline so that each kernel
// still compiles as the one loop nest it used to be: the compiler fuses a multiply with an add
// (-ffp-contract=fast, FMA) only within a function, and a step it left out of line would change
// which pairs fuse, so the rounding; inlined, the results stay bit for bit what they were.
#define GATTN_ATTN_STEP [[gnu::always_inline]] inline

// ---- Forward steps --------------------------------------------------------------------------------

// Which of the forward's row loops runs: plain softmax weights, the vectorised f32 modulation, or
// the general modulation (noise, hard gates, statistics, the entropy output).
struct ForwardMode {
  bool modulated = false;
  bool want_entropy = false;
  bool fast_modulation = false;
};

// One thread's working memory for a query tile: the logits S and weights W of a key tile, the
// output accumulator, the online-softmax state per row (running max m, Σ P as l, the entropy sums
// e1 and e0, key 0's logit s0 and modulation M0 for the sink), the active rows' positions, and the
// compact copy of a partly active tile's q rows.
template <class T>
struct ForwardScratch {
  explicit ForwardScratch(std::int64_t d)
      : S(kAttnTileQ * kAttnTileK),
        W(kAttnTileQ * kAttnTileK),
        acc(kAttnTileQ * d),
        m(kAttnTileQ),
        l(kAttnTileQ),
        e1(kAttnTileQ),
        e0(kAttnTileQ),
        s0(kAttnTileQ),
        M0(kAttnTileQ),
        pos(kAttnTileQ) {}
  std::vector<T> S, W, acc;
  std::vector<T> m, l, e1, e0, s0, M0;
  std::vector<std::int64_t> pos;
  std::vector<T> q_compact;
};

// What one row's weights on one key tile add to its running sums: Σ P (l), and for the entropy
// output Σ w·ln-term (e1) and Σ w (e0).
template <class T>
struct TileRowSums {
  T l = 0, e1 = 0, e0 = 0;
};

// Skipped rows of query tile [i0, i0 + tile_rows): zero output and statistics, no work.
template <class T>
GATTN_ATTN_STEP void zero_skipped_rows(const FlashAttentionParams<T>& p, const FlashForwardOutputs<T>& o,
                                       std::int64_t bh, std::int64_t i0, std::int64_t tile_rows) {
  const std::int64_t d = p.d, base = bh * p.Tq;
  for (std::int64_t i = i0; i < i0 + tile_rows; ++i) {
    if (row_active(p, bh, i)) continue;
    std::fill(o.out + (base + i) * d, o.out + (base + i + 1) * d, T(0));
    o.lse[base + i] = 0;
    if (o.row_entropy) o.row_entropy[base + i] = 0;
    if (o.row_asum) o.row_asum[base + i] = 0;
    if (o.row_sink) o.row_sink[base + i] = 0;
  }
}

// Copies rows pos[0..n) of `src` (rows of d elements) into `dst`, packed; returns dst's data.
template <class T>
GATTN_ATTN_STEP T* gather_rows(const T* src, const std::int64_t* pos, std::int64_t n, std::int64_t d,
                               std::vector<T>& dst) {
  dst.resize(static_cast<std::size_t>(n * d));
  for (std::int64_t r = 0; r < n; ++r) std::copy_n(src + pos[r] * d, d, dst.data() + r * d);
  return dst.data();
}

// The online-softmax state of a query tile before its first key tile.
template <class T>
GATTN_ATTN_STEP void start_tile_state(ForwardScratch<T>& ws, std::int64_t rows, std::int64_t d) {
  const T neg_inf = -std::numeric_limits<T>::infinity();
  std::fill(ws.m.begin(), ws.m.end(), neg_inf);
  std::fill(ws.l.begin(), ws.l.end(), T(0));
  std::fill(ws.e1.begin(), ws.e1.end(), T(0));
  std::fill(ws.e0.begin(), ws.e0.end(), T(0));
  std::fill(ws.s0.begin(), ws.s0.end(), neg_inf);
  std::fill(ws.M0.begin(), ws.M0.end(), T(1));
  std::fill(ws.acc.begin(), ws.acc.begin() + rows * d, T(0));
}

// max_c srow[c] over the visible columns. The comparison is written out: GCC 12 does not vectorise
// a reduction through std::max (a NaN logit is skipped either way).
template <class T>
GATTN_ATTN_STEP T visible_max(const T* srow, const VisibleColumns& vc) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  return over_visible_columns(vc, [&](int c0, int c1, auto visible) [[gnu::always_inline]] {
    T tile_max = kNegInf;
#pragma omp simd reduction(max : tile_max)
    for (int c = c0; c < c1; ++c) {
      const T s = visible(c) ? srow[c] : kNegInf;
      tile_max = s > tile_max ? s : tile_max;
    }
    return tile_max;
  });
}

// Weights without modulation, w = P up to the row's scale: the common case, branch-free so it
// vectorises.
template <class T>
GATTN_ATTN_STEP TileRowSums<T> softmax_weights(const T* srow, T* wrow, const VisibleColumns& vc, T m_new,
                                               bool want_entropy) {
  T row_l = 0, row_e1 = 0, row_e0 = 0;
  const std::int64_t c_lo = vc.lo, c_hi = vc.hi;
  row_l = over_visible_columns(vc, [&](int c0, int c1, auto visible) [[gnu::always_inline]] {
    T l = 0;
#pragma omp simd reduction(+ : l)
    for (int c = c0; c < c1; ++c) {
      const T e = vexp(srow[c] - m_new);
      const T w = visible(c) ? e : T(0);
      wrow[c] = w;
      l += w;
    }
    return l;
  });
  if (want_entropy) {
    // ln A = (S − m) − ln l; S − m stays small, so f32 keeps its precision, and the − ln l part is
    // applied at the end with the final l. (S is finite: w·(S − m) = 0 where w underflows.)
#pragma omp simd reduction(+ : row_e1)
    for (std::int64_t c = c_lo; c < c_hi; ++c) row_e1 += wrow[c] * (srow[c] - m_new);
    row_e0 = row_l;
  }
  return {row_l, row_e1, row_e0};
}

// Modulated weights for f32 without noise, statistics or entropies: branch-free so it vectorises
// (σ through fast_exp; the general loop below uses std::exp). Only f32 takes this path.
template <class T>
GATTN_ATTN_STEP TileRowSums<T> fast_modulated_weights(const FlashAttentionParams<T>& p, std::int64_t bh, std::int64_t i,
                                                      std::int64_t j0, const T* srow, T* wrow, const VisibleColumns& vc,
                                                      T m_new) {
  T row_l = 0;
  if constexpr (std::is_same_v<T, float>) {
    const float a_i = p.modulation_row[bh * p.Tq + i], alpha = head_alpha(p, bh), keep = 1.0f - alpha;
    const float* b = p.modulation_col + bh * p.Tk + j0;
    row_l = over_visible_columns(vc, [&](int c0, int c1, auto visible) [[gnu::always_inline]] {
      float l = 0;
#pragma omp simd reduction(+ : l)
      for (int c = c0; c < c1; ++c) {
        const float e = vexp(srow[c] - m_new);
        const float pij = visible(c) ? e : 0.0f;
        l += pij;
        wrow[c] = pij * (alpha * vsigmoid((a_i + b[c]) * p.inv_tau) + keep);
      }
      return l;
    });
  }
  return {row_l, T(0), T(0)};
}

// The per-task sums of the modulation outputs: Σ h(G) (modulation entropy) and Σ G (modulation sum).
template <class T>
struct ModulationSums {
  T entropy = 0, sum = 0;
};

// Modulated weights, the general case: w = P·M with M = αGv + 1 − α, plus the gate's moments, the
// modulation entropy and sum, and the row-entropy sums where asked for.
template <class T>
GATTN_ATTN_STEP TileRowSums<T> modulated_weights(const FlashAttentionParams<T>& p, const FlashForwardOutputs<T>& o,
                                                 bool want_entropy, std::int64_t bh, std::int64_t i, std::int64_t j0,
                                                 const T* srow, T* wrow, std::int64_t c_lo, std::int64_t c_hi, T m_new,
                                                 ops::GateMoments& moments, ModulationSums<T>& mod) {
  T row_l = 0, row_e1 = 0, row_e0 = 0;
  const T alpha = head_alpha(p, bh);
  for (std::int64_t c = c_lo; c < c_hi; ++c) {
    const T pij = vexp(srow[c] - m_new);
    row_l += pij;
    const ModulationAt<T> g = modulation_at(p, alpha, bh, i, j0 + c);
    const T M = g.M;
    if (o.modulation_moments) moments.add(static_cast<double>(g.Gv));
    if (o.modulation_entropy) mod.entropy += binary_entropy_from_logit(g.u, g.G);
    if (o.modulation_sum) mod.sum += g.G;
    const T w = pij * M;
    wrow[c] = w;
    if (want_entropy && w > T(0)) {  // 0·ln 0 = 0: an entry with no weight adds nothing
      row_e0 += w;
      row_e1 += w * ((srow[c] - m_new) + std::log(M));  // ln A = (S − m) − ln l + ln M
    }
  }
  return {row_l, row_e1, row_e0};
}

// Moves row r's running sums and accumulator from max m_old to m_new (corr = e^(m_old − m_new)) and
// adds this tile's sums. e1 is kept relative to the running max: moving the max from m to m'
// rescales by corr and shifts each (S − m) by (m − m'), i.e. adds (m − m')·e0 before rescaling.
template <class T>
GATTN_ATTN_STEP void online_softmax_update(ForwardScratch<T>& ws, std::int64_t r, std::int64_t d, T corr, T m_old,
                                           T m_new, const TileRowSums<T>& sums) {
  if (corr != T(0)) ws.e1[r] = corr * (ws.e1[r] + (m_old - m_new) * ws.e0[r]);
  ws.e1[r] += sums.e1;
  ws.e0[r] = ws.e0[r] * corr + sums.e0;
  ws.l[r] = ws.l[r] * corr + sums.l;
  if (corr != T(1))
    for (std::int64_t x = 0; x < d; ++x) ws.acc[r * d + x] *= corr;
}

// Row r (query i) against key tile [j0, j0 + cols), whose logits are in S: its weights into W and
// the online-softmax update of its state.
template <class T>
GATTN_ATTN_STEP void forward_row_on_key_tile(const FlashAttentionParams<T>& p, const FlashForwardOutputs<T>& o,
                                             const ForwardMode& mode, std::int64_t bh, std::int64_t r, std::int64_t i,
                                             std::int64_t j0, std::int64_t cols, ForwardScratch<T>& ws,
                                             ops::GateMoments& moments, ModulationSums<T>& mod) {
  const std::int64_t c_lo = std::max<std::int64_t>(first_key(p, i) - j0, 0);
  const std::int64_t c_hi = std::min<std::int64_t>(end_key(p, i) - j0, cols);
  const T* srow = ws.S.data() + r * kAttnTileK;
  T* wrow = ws.W.data() + r * kAttnTileK;
  if (c_lo >= c_hi) {  // no visible key of this row in this tile
    std::fill(wrow, wrow + cols, T(0));
    return;
  }
  const VisibleColumns vc = visible_columns(c_lo, c_hi, cols);
  const T tile_max = visible_max(srow, vc);
  const T m_new = std::max(ws.m[r], tile_max);
  const T m_old = ws.m[r];
  const T corr = std::exp(m_old - m_new);  // 0 on the row's first tile (m = −inf)
  ws.m[r] = m_new;
  std::fill(wrow, wrow + c_lo, T(0));
  TileRowSums<T> sums;
  if (!mode.modulated)
    sums = softmax_weights(srow, wrow, vc, m_new, mode.want_entropy);
  else if (mode.fast_modulation)
    sums = fast_modulated_weights(p, bh, i, j0, srow, wrow, vc, m_new);
  else
    sums = modulated_weights(p, o, mode.want_entropy, bh, i, j0, srow, wrow, c_lo, c_hi, m_new, moments, mod);
  if (j0 == 0 && c_lo == 0) {  // key 0 is visible: remember its logit and modulation for the sink
    ws.s0[r] = srow[0];
    ws.M0[r] = mode.modulated ? modulation_at(p, head_alpha(p, bh), bh, i, 0).M : T(1);
  }
  std::fill(wrow + c_hi, wrow + cols, T(0));
  online_softmax_update(ws, r, p.d, corr, m_old, m_new, sums);
}

// Row r (query i) after the last key tile: out = acc / l, the log-sum-exp, the row entropy and the
// sink ratio.
template <class T>
GATTN_ATTN_STEP void finish_row(const FlashAttentionParams<T>& p, const FlashForwardOutputs<T>& o, bool want_entropy,
                                std::int64_t bh, std::int64_t r, std::int64_t i, const ForwardScratch<T>& ws) {
  const std::int64_t d = p.d, base = bh * p.Tq;
  const T log_l = std::log(ws.l[r]);
  const T L = ws.m[r] + log_l;
  const T inv_l = T(1) / ws.l[r];
  T* out_row = o.out + (base + i) * d;
  for (std::int64_t x = 0; x < d; ++x) out_row[x] = ws.acc[r * d + x] * inv_l;
  o.lse[base + i] = L;
  if (want_entropy) {
    const T asum = ws.e0[r] * inv_l;
    o.row_entropy[base + i] = log_l * asum - ws.e1[r] * inv_l;
    if (o.row_asum) o.row_asum[base + i] = asum;
  }
  if (o.row_sink)
    o.row_sink[base + i] = ws.s0[r] == -std::numeric_limits<T>::infinity() ? T(0) : std::exp(ws.s0[r] - L) * ws.M0[r];
}

// Every key tile of k as its transposed panel (transpose_key_tile), [B·H_kv, key tiles, d,
// kAttnTileK]: made once per forward for all the query tiles, and query heads, that read the tile
// (at T = 4096, 64 query tiles per key tile; made per tile pair it was ~8 % of the forward's
// products). Threads take tiles when the caller's team is running (an orphaned omp for).
template <class T>
void transposed_keys(const FlashAttentionParams<T>& p, std::vector<T>& panels) {
  const std::int64_t n_kt = (p.Tk + kAttnTileK - 1) / kAttnTileK, panel = p.d * kAttnTileK;
#pragma omp for schedule(static)
  for (std::int64_t t = 0; t < p.B * p.H_kv * n_kt; ++t) {
    const std::int64_t head = t / n_kt, j0 = t % n_kt * kAttnTileK;
    transpose_key_tile(p.k + (head * p.Tk + j0) * p.d, std::min(kAttnTileK, p.Tk - j0), p.d, panels.data() + t * panel);
  }
}

// One (head, query tile) task of the forward. `mod` receives the tile's modulation-entropy and sum.
// `tile_plan`: the query tile's row of the pruning plan (one entry per key tile), or null.
// `key_panels`: the key tiles of the head's key/value head as transposed panels (transposed_keys).
template <class T>
GATTN_ATTN_STEP void forward_query_tile(const FlashAttentionParams<T>& p, const FlashForwardOutputs<T>& o,
                                        const ForwardMode& mode, std::int64_t bh, std::int64_t qt, std::int64_t n_qt,
                                        const std::uint8_t* tile_plan, const T* key_panels, ForwardScratch<T>& ws,
                                        ModulationSums<T>& mod) {
  const std::int64_t Tn = p.Tq, Tk = p.Tk, d = p.d;
  const std::int64_t i0 = qt * kAttnTileQ, tile_rows = std::min(kAttnTileQ, Tn - i0), base = bh * Tn;
  const std::int64_t kvbase = kv_row_base(p, bh);
  const std::int64_t rows = active_rows(p, bh, i0, tile_rows, ws.pos.data());
  const T* q_rows = p.q + (base + i0) * d;
  if (rows < tile_rows) {
    zero_skipped_rows(p, o, bh, i0, tile_rows);
    if (rows == 0) {
      if (o.modulation_moments) o.modulation_moments[bh * n_qt + qt] = ops::GateMoments{};
      return;  // the partial entropy sum stays 0
    }
    q_rows = gather_rows(p.q + base * d, ws.pos.data(), rows, d, ws.q_compact);
  }
  start_tile_state(ws, rows, d);
  ops::GateMoments moments;
  // Keys [j_lo, j_hi) cover every active row's visible keys.
  const std::int64_t j_lo = first_key(p, ws.pos[0]), j_hi = end_key(p, ws.pos[static_cast<std::size_t>(rows - 1)]);
  for (std::int64_t j0 = j_lo / kAttnTileK * kAttnTileK; j0 < j_hi; j0 += kAttnTileK) {
    if (tile_plan && tile_plan[j0 / kAttnTileK] == ops::kTileSkip) continue;  // pruned: no product, no exp
    const std::int64_t cols = std::min(kAttnTileK, Tk - j0);
    const TileRowBlocks blocks = tile_row_blocks(p, ws.pos.data(), rows, j0, cols);
    tile_logits(p, bh, q_rows, key_panels + j0 / kAttnTileK * d * kAttnTileK, ws.pos.data(), blocks, rows, j0, cols,
                ws.S.data());
    for (std::int64_t r = 0; r < rows; ++r)
      forward_row_on_key_tile(p, o, mode, bh, r, ws.pos[static_cast<std::size_t>(r)], j0, cols, ws, moments, mod);
    // acc += W · V for this key tile, by row blocks (W is 0 past each block's columns).
    for (int k = 0; k < blocks.n; ++k) {
      const TileRowBlock& b = blocks.block[k];
      if (b.cols == 0) continue;
      tile_gemm<T>({.M = b.r1 - b.r0,
                    .N = d,
                    .K = b.cols,
                    .A = ws.W.data() + b.r0 * kAttnTileK,
                    .lda = kAttnTileK,
                    .B = p.v + (kvbase + j0) * d,
                    .ldb = d,
                    .beta = T(1),
                    .C = ws.acc.data() + b.r0 * d,
                    .ldc = d});
    }
  }
  for (std::int64_t r = 0; r < rows; ++r)
    finish_row(p, o, mode.want_entropy, bh, r, ws.pos[static_cast<std::size_t>(r)], ws);
  if (o.modulation_moments) o.modulation_moments[bh * n_qt + qt] = moments;
}

// ---- Backward steps -------------------------------------------------------------------------------

// One thread's working memory for a head: the tiles S, A, dA, dS; the current key tile's k and v
// as transposed panels; D_i per query; scratch for the q, k, v gradients that are not wanted; the
// head's active rows (positions, where each query tile's run starts and how long it is) and for
// partly active tiles the compact q, dO and dq rows (indexed like `pos`).
template <class T>
struct BackwardScratch {
  BackwardScratch(std::int64_t Tn, std::int64_t n_qt, std::int64_t d)
      : S(kAttnTileQ * kAttnTileK),
        A(kAttnTileQ * kAttnTileK),
        dA(kAttnTileQ * kAttnTileK),
        dS(kAttnTileQ * kAttnTileK),
        k_panel(static_cast<std::size_t>(d * kAttnTileK)),
        v_panel(static_cast<std::size_t>(d * kAttnTileK)),
        D(static_cast<std::size_t>(Tn)),
        pos(static_cast<std::size_t>(Tn)),
        tile_off(static_cast<std::size_t>(n_qt)),
        tile_n(static_cast<std::size_t>(n_qt)) {}
  std::vector<T> S, A, dA, dS;
  std::vector<T> k_panel, v_panel;
  std::vector<T> D;
  std::vector<T> dq_local, dk_local, dv_local;
  std::vector<std::int64_t> pos, tile_off, tile_n;
  std::vector<T> q_compact, do_compact, dq_compact;
};

// One head's place in the tensors and where its q, k, v gradients go.
template <class T>
struct HeadGradients {
  std::int64_t bh = 0, base = 0, kbase = 0;  // base = bh·Tq (query rows), kbase = bh·Tk (its column terms)
  std::int64_t kvbase = 0;                   // its key/value head's rows in k and v (kv_row_base)
  T* dq = nullptr;
  T* dk = nullptr;  // the unit's dK and dV rows (backward_unit), which the head adds to
  T* dv = nullptr;
  T dE = 0;       // dL/d(modulation entropy) of this head
  T dSum = 0;     // dL/d(modulation sum) of this head
  T alpha = 0;    // this head's modulation α (head_alpha)
  T d_alpha = 0;  // this head's dL/dα, summed over its tiles
};

// Which of the backward's row loops runs (as the forward's ForwardMode).
struct BackwardMode {
  bool modulated = false;
  bool fast_modulation = false;  // and, per row, no dH
};

// Where the gradient of n elements from row `rows_base` goes: the output zeroed when wanted, else
// zeroed scratch (the other terms still need dS).
template <class T>
GATTN_ATTN_STEP T* zeroed_gradient(T* out, std::vector<T>& local, std::int64_t rows_base, std::int64_t n,
                                   std::int64_t d) {
  if (out) {
    std::fill(out + rows_base * d, out + rows_base * d + n, T(0));
    return out + rows_base * d;
  }
  local.assign(static_cast<std::size_t>(n), T(0));
  return local.data();
}

// Zeroes head bh's own gradients (dq and the terms') and returns where they go; dK and dV go to
// the unit's rows dk, dv, zeroed by the unit.
template <class T>
GATTN_ATTN_STEP HeadGradients<T> start_head_gradients(const FlashAttentionParams<T>& p,
                                                      const FlashBackwardInputs<T>& in,
                                                      const FlashBackwardOutputs<T>& g, std::int64_t bh, T* dk, T* dv,
                                                      BackwardScratch<T>& ws) {
  const std::int64_t Tn = p.Tq, Tk = p.Tk, d = p.d;
  HeadGradients<T> h;
  h.bh = bh;
  h.base = bh * Tn;
  h.kbase = bh * Tk;
  h.kvbase = kv_row_base(p, bh);
  h.dq = zeroed_gradient(g.dq, ws.dq_local, h.base, Tn * d, d);
  h.dk = dk;
  h.dv = dv;
  if (g.d_row_bias) std::fill(g.d_row_bias + h.base, g.d_row_bias + h.base + Tn, T(0));
  if (g.d_col_bias) std::fill(g.d_col_bias + h.kbase, g.d_col_bias + h.kbase + Tk, T(0));
  if (g.d_modulation_row) std::fill(g.d_modulation_row + h.base, g.d_modulation_row + h.base + Tn, T(0));
  if (g.d_modulation_col) std::fill(g.d_modulation_col + h.kbase, g.d_modulation_col + h.kbase + Tk, T(0));
  h.dE = in.d_modulation_entropy ? in.d_modulation_entropy[bh] : T(0);
  h.dSum = in.d_modulation_sum ? in.d_modulation_sum[bh] : T(0);
  h.alpha = p.modulation_row ? head_alpha(p, bh) : T(0);
  return h;
}

// Finds head bh's active rows per query tile (ws.pos, ws.tile_off, ws.tile_n); returns how many
// there are, and sets any_partial when some tile has some but not all rows active.
template <class T>
GATTN_ATTN_STEP std::int64_t find_active_rows(const FlashAttentionParams<T>& p, std::int64_t bh, std::int64_t n_qt,
                                              BackwardScratch<T>& ws, bool& any_partial) {
  std::int64_t n_active = 0;
  any_partial = false;
  for (std::int64_t qt = 0; qt < n_qt; ++qt) {
    const std::int64_t i0 = qt * kAttnTileQ, tile_rows = std::min(kAttnTileQ, p.Tq - i0);
    ws.tile_off[static_cast<std::size_t>(qt)] = n_active;
    const std::int64_t n = active_rows(p, bh, i0, tile_rows, ws.pos.data() + n_active);
    ws.tile_n[static_cast<std::size_t>(qt)] = n;
    n_active += n;
    any_partial = any_partial || (n > 0 && n < tile_rows);
  }
  return n_active;
}

// The compact q and dO of the head's active rows, and their dq zeroed.
template <class T>
GATTN_ATTN_STEP void gather_active_rows(const FlashAttentionParams<T>& p, const FlashBackwardInputs<T>& in,
                                        std::int64_t base, std::int64_t n_active, BackwardScratch<T>& ws) {
  const std::int64_t d = p.d;
  ws.q_compact.resize(static_cast<std::size_t>(n_active * d));
  ws.dq_compact.assign(static_cast<std::size_t>(n_active * d), T(0));
  if (in.d_out) ws.do_compact.resize(static_cast<std::size_t>(n_active * d));
  for (std::int64_t a = 0; a < n_active; ++a) {
    const std::int64_t i = ws.pos[static_cast<std::size_t>(a)];
    std::copy_n(p.q + (base + i) * d, d, ws.q_compact.data() + a * d);
    if (in.d_out) std::copy_n(in.d_out + (base + i) * d, d, ws.do_compact.data() + a * d);
  }
}

// D_i = rowsum(dO ∘ O)_i + dH_i (H_i − Σ_j A_ij) for every active row.
template <class T>
GATTN_ATTN_STEP void row_dots(const FlashAttentionParams<T>& p, const FlashBackwardInputs<T>& in, std::int64_t base,
                              std::int64_t n_active, BackwardScratch<T>& ws) {
  const std::int64_t d = p.d;
  for (std::int64_t a = 0; a < n_active; ++a) {
    const std::int64_t i = ws.pos[static_cast<std::size_t>(a)];
    T dot = 0;
    if (in.d_out)
      for (std::int64_t x = 0; x < d; ++x) dot += in.d_out[(base + i) * d + x] * in.out[(base + i) * d + x];
    if (in.d_row_entropy) dot += in.d_row_entropy[base + i] * (in.row_entropy[base + i] - in.row_asum[base + i]);
    ws.D[static_cast<std::size_t>(i)] = dot;
  }
}

// The two sums one row's gradients add to its row terms: Σ_j dS_ij (d row_bias) and Σ_j du_ij
// (d modulation_row).
template <class T>
struct RowGradSums {
  T ds = 0, du = 0;
};

// One row's A and dS without modulation, branch-free so it vectorises. Where P underflows to 0, dS
// is 0 whatever dA is.
template <class T>
GATTN_ATTN_STEP RowGradSums<T> softmax_row_grads(const T* srow, T* arow, const T* darow, T* dsrow,
                                                 const VisibleColumns& vc, T L, T dH, T Di) {
  const T ds_row = over_visible_columns(vc, [&](int c0, int c1, auto visible_at) [[gnu::always_inline]] {
    T sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int c = c0; c < c1; ++c) {
      const bool visible = visible_at(c);
      const T e = vexp(srow[c] - L);
      const T pij = visible ? e : T(0);
      const T da = darow[c] - dH * ((srow[c] - L) + T(1));
      arow[c] = pij;
      const T ds = visible ? pij * (da - Di) : T(0);
      dsrow[c] = ds;
      sum += ds;
    }
    return sum;
  });
  return {ds_row, T(0)};
}

// One row's A, dS and du with modulation for f32 without noise or a row-entropy gradient:
// branch-free so it vectorises (see the forward); d_alpha is summed per row, so its rounding differs
// from the general loop below. du overwrites dA's row, which is read here for the last time.
template <class T>
GATTN_ATTN_STEP RowGradSums<T> fast_modulated_row_grads(const FlashAttentionParams<T>& p,
                                                        const FlashBackwardOutputs<T>& g, HeadGradients<T>& h,
                                                        std::int64_t i, std::int64_t j0, const T* srow, T* arow,
                                                        T* darow, T* dsrow, const VisibleColumns& vc, T L, T Di) {
  T ds_row = 0, d_row = 0;
  if constexpr (std::is_same_v<T, float>) {
    const float a_i = p.modulation_row[h.base + i], alpha = h.alpha, keep = 1.0f - h.alpha;
    const float* b = p.modulation_col + h.kbase + j0;
    float* dcol = g.d_modulation_col ? g.d_modulation_col + h.kbase + j0 : nullptr;
    float* du_row = darow;
    const float dE = h.dE;
    struct Sums {
      float ds, d, alpha;
    };
    const Sums sums = over_visible_columns(vc, [&](int c0, int c1, auto visible_at) [[gnu::always_inline]] {
      float ds_sum = 0, d_sum = 0, alpha_sum = 0;
#pragma omp simd reduction(+ : ds_sum, d_sum, alpha_sum)
      for (int c = c0; c < c1; ++c) {
        const bool visible = visible_at(c);
        const float e = vexp(srow[c] - L);
        const float pij = visible ? e : 0.0f;
        const float u = (a_i + b[c]) * p.inv_tau;
        const float G = vsigmoid(u);
        const float M = alpha * G + keep;
        const float da = darow[c];
        arow[c] = pij * M;
        const float ds = visible ? pij * (da * M - Di) : 0.0f;
        dsrow[c] = ds;
        ds_sum += ds;
        const float dM = visible ? da * pij : 0.0f;
        alpha_sum += dM * (G - 1.0f);
        const float du_all = (alpha * dM - dE * u) * G * (1.0f - G) * p.inv_tau;
        const float du = visible ? du_all : 0.0f;
        d_sum += du;
        du_row[c] = du;
      }
      return Sums{ds_sum, d_sum, alpha_sum};
    });
    ds_row = sums.ds;
    d_row = sums.d;
    h.d_alpha += sums.alpha;
    if (dcol)
      for (int c = vc.lo; c < vc.hi; ++c) dcol[c] += du_row[c];
  }
  return {ds_row, d_row};
}

// One row's A, dS and du with modulation, the general case (noise, hard gates, softplus, dropout, a
// row-entropy or modulation-sum gradient, f64).
template <class T>
GATTN_ATTN_STEP RowGradSums<T> modulated_row_grads(const FlashAttentionParams<T>& p, const FlashBackwardOutputs<T>& g,
                                                   HeadGradients<T>& h, std::int64_t i, std::int64_t j0, const T* srow,
                                                   T* arow, const T* darow, T* dsrow, std::int64_t c_lo,
                                                   std::int64_t c_hi, T L, T dH, T Di) {
  T ds_row = 0, d_row = 0;
  for (std::int64_t c = c_lo; c < c_hi; ++c) {
    const std::int64_t j = j0 + c;
    const T pij = vexp(srow[c] - L);
    const ModulationAt<T> mv = modulation_at(p, h.alpha, h.bh, i, j);
    const T u = mv.u, G = mv.G, M = mv.M;
    const T a = pij * M;
    T da = darow[c];
    if (dH != T(0) && a > T(0)) da -= dH * ((srow[c] - L) + std::log(M) + T(1));
    arow[c] = a;
    const T ds = pij * (da * M - Di);
    dsrow[c] = ds;
    ds_row += ds;
    const T dM = mv.kept ? da * pij : T(0);  // a dropped entry's M is 1, whatever u and α
    h.d_alpha += dM * (mv.Gv - T(1));
    // dL/dG (through M, the entropy and the sum) times dG/du: G(1 − G) for σ, σ(u) for softplus (whose
    // entropy is refused); /τ for u = z/τ.
    T dG = h.alpha * dM - h.dE * u;
    if (h.dSum != T(0)) dG += h.dSum;
    const T du = p.softplus ? dG * sigmoid(u) * p.inv_tau : dG * G * (T(1) - G) * p.inv_tau;
    d_row += du;
    if (g.d_modulation_col) g.d_modulation_col[h.kbase + j] += du;
  }
  return {ds_row, d_row};
}

// Row r (query i) of a (key tile, query tile) pair, whose S and dA are computed: its A and dS rows
// (zero outside the visible keys), and its sums into the row and column terms. Returns whether it
// sees any key of the tile.
template <class T>
GATTN_ATTN_STEP bool backward_row(const FlashAttentionParams<T>& p, const FlashBackwardInputs<T>& in,
                                  const FlashBackwardOutputs<T>& g, const BackwardMode& mode, HeadGradients<T>& h,
                                  std::int64_t r, std::int64_t i, std::int64_t j0, std::int64_t cols,
                                  BackwardScratch<T>& ws) {
  const std::int64_t base = h.base, kbase = h.kbase;
  const T L = in.lse[base + i];
  const T dH = in.d_row_entropy ? in.d_row_entropy[base + i] : T(0);
  const T Di = ws.D[static_cast<std::size_t>(i)];
  T* srow = ws.S.data() + r * kAttnTileK;
  T* arow = ws.A.data() + r * kAttnTileK;
  T* darow = ws.dA.data() + r * kAttnTileK;
  T* dsrow = ws.dS.data() + r * kAttnTileK;
  // Visible keys of query i in this tile: columns [c_lo, c_hi); the rest contribute 0.
  const std::int64_t c_lo = std::max<std::int64_t>(first_key(p, i) - j0, 0);
  const std::int64_t c_hi = std::min<std::int64_t>(end_key(p, i) - j0, cols);
  if (c_lo >= c_hi) {
    std::fill(arow, arow + cols, T(0));
    std::fill(dsrow, dsrow + cols, T(0));
    return false;
  }
  std::fill(arow, arow + c_lo, T(0));
  std::fill(dsrow, dsrow + c_lo, T(0));
  std::fill(arow + c_hi, arow + cols, T(0));
  std::fill(dsrow + c_hi, dsrow + cols, T(0));
  RowGradSums<T> sums;
  if (!mode.modulated)
    sums = softmax_row_grads(srow, arow, darow, dsrow, visible_columns(c_lo, c_hi, cols), L, dH, Di);
  else if (mode.fast_modulation && dH == T(0))
    sums = fast_modulated_row_grads(p, g, h, i, j0, srow, arow, darow, dsrow, visible_columns(c_lo, c_hi, cols), L, Di);
  else
    sums = modulated_row_grads(p, g, h, i, j0, srow, arow, darow, dsrow, c_lo, c_hi, L, dH, Di);
  if (g.d_col_bias)
    for (std::int64_t c = c_lo; c < c_hi; ++c) g.d_col_bias[kbase + j0 + c] += dsrow[c];
  if (g.d_modulation_row) g.d_modulation_row[base + i] += sums.du;
  if (g.d_row_bias) g.d_row_bias[base + i] += sums.ds;
  return true;
}

// Key tile [j0, j0 + cols) against query tile qt: recompute S and A, form dA = dO·Vᵀ and dS, and
// accumulate dv += Aᵀ dO, dq += scale dS k, dk += scale dSᵀ q.
template <class T>
GATTN_ATTN_STEP void backward_tile_pair(const FlashAttentionParams<T>& p, const FlashBackwardInputs<T>& in,
                                        const FlashBackwardOutputs<T>& g, const BackwardMode& mode, HeadGradients<T>& h,
                                        std::int64_t j0, std::int64_t cols, std::int64_t i0, BackwardScratch<T>& ws) {
  const std::int64_t d = p.d, base = h.base, kvbase = h.kvbase;
  const std::int64_t qt = i0 / kAttnTileQ, tile_rows = std::min(kAttnTileQ, p.Tq - i0);
  const std::int64_t rows = ws.tile_n[static_cast<std::size_t>(qt)], off = ws.tile_off[static_cast<std::size_t>(qt)];
  if (rows == 0) return;
  // The tile's own rows when all are active, else their compact copies.
  const bool whole = rows == tile_rows;
  const std::int64_t* rpos = ws.pos.data() + off;
  const T* q_rows = whole ? p.q + (base + i0) * d : ws.q_compact.data() + off * d;
  const T* do_rows = !in.d_out ? nullptr : whole ? in.d_out + (base + i0) * d : ws.do_compact.data() + off * d;
  T* dq_rows = whole ? h.dq + i0 * d : ws.dq_compact.data() + off * d;
  const TileRowBlocks blocks = tile_row_blocks(p, rpos, rows, j0, cols);
  tile_logits(p, h.bh, q_rows, ws.k_panel.data(), rpos, blocks, rows, j0, cols, ws.S.data());
  if (do_rows)
    tile_products_with_keys(blocks, T(1), do_rows, ws.v_panel.data(), d, ws.dA.data());
  else
    std::fill(ws.dA.begin(), ws.dA.end(), T(0));
  bool any = false;
  for (std::int64_t r = 0; r < rows; ++r)
    if (backward_row(p, in, g, mode, h, r, rpos[r], j0, cols, ws)) any = true;
  if (!any) return;
  // dv += Aᵀ dO; dq += scale dS k; dk += scale dSᵀ q; by row blocks (A and dS are 0 past each
  // block's columns), the blocks' dv and dk terms added in block order.
  for (int k = 0; k < blocks.n; ++k) {
    const TileRowBlock& b = blocks.block[k];
    if (b.cols == 0) continue;
    const std::int64_t m = b.r1 - b.r0;
    if (do_rows) add_block_product_to_keys(b, T(1), ws.A.data(), do_rows, d, h.dv + j0 * d);
    tile_gemm<T>({.M = m,
                  .N = d,
                  .K = b.cols,
                  .alpha = p.scale,
                  .A = ws.dS.data() + b.r0 * kAttnTileK,
                  .lda = kAttnTileK,
                  .B = p.k + (kvbase + j0) * d,
                  .ldb = d,
                  .beta = T(1),
                  .C = dq_rows + b.r0 * d,
                  .ldc = d});
    add_block_product_to_keys(b, p.scale, ws.dS.data(), q_rows, d, h.dk + j0 * d);
  }
}

// Key tile kt against every query tile that can see one of its keys: causal, i ≥ j0 and
// i − w < j0 + cols; else all. The tile's k and v are transposed once here for all of them.
// `head_plan`: the head's pruning plan [query tiles, key tiles], or null; the pairs it skips are
// passed over, as the forward passed them over.
template <class T>
GATTN_ATTN_STEP void backward_key_tile(const FlashAttentionParams<T>& p, const FlashBackwardInputs<T>& in,
                                       const FlashBackwardOutputs<T>& g, const BackwardMode& mode, HeadGradients<T>& h,
                                       std::int64_t kt, const std::uint8_t* head_plan, BackwardScratch<T>& ws) {
  const std::int64_t Tn = p.Tq;
  const std::int64_t j0 = kt * kAttnTileK, cols = std::min(kAttnTileK, p.Tk - j0);
  const std::int64_t i_lo = p.causal ? j0 / kAttnTileQ * kAttnTileQ : 0;
  const std::int64_t i_hi = !p.causal || p.window == 0 ? Tn : std::min(Tn, j0 + cols - 1 + p.window);
  const std::int64_t n_kt = (p.Tk + kAttnTileK - 1) / kAttnTileK;
  transpose_key_tile(p.k + (h.kvbase + j0) * p.d, cols, p.d, ws.k_panel.data());
  if (in.d_out) transpose_key_tile(p.v + (h.kvbase + j0) * p.d, cols, p.d, ws.v_panel.data());
  for (std::int64_t i0 = i_lo; i0 < i_hi; i0 += kAttnTileQ) {
    if (head_plan && head_plan[i0 / kAttnTileQ * n_kt + kt] == ops::kTileSkip) continue;
    backward_tile_pair(p, in, g, mode, h, j0, cols, i0, ws);
  }
}

// The compact dq rows of partly active tiles back to their places (whole tiles accumulated in place).
template <class T>
GATTN_ATTN_STEP void scatter_compact_dq(const FlashAttentionParams<T>& p, std::int64_t n_qt,
                                        const BackwardScratch<T>& ws, T* dq) {
  const std::int64_t d = p.d;
  for (std::int64_t qt = 0; qt < n_qt; ++qt) {
    const std::int64_t i0 = qt * kAttnTileQ, tile_rows = std::min(kAttnTileQ, p.Tq - i0);
    const std::int64_t n = ws.tile_n[static_cast<std::size_t>(qt)], off = ws.tile_off[static_cast<std::size_t>(qt)];
    if (n == 0 || n == tile_rows) continue;
    for (std::int64_t a = off; a < off + n; ++a)
      std::copy_n(ws.dq_compact.data() + a * d, d, dq + ws.pos[static_cast<std::size_t>(a)] * d);
  }
}

// The whole backward of head bh, its dK and dV added to the rows dk, dv. `plan`: the pruning plan of
// every head, or null.
template <class T>
GATTN_ATTN_STEP void backward_head(const FlashAttentionParams<T>& p, const FlashBackwardInputs<T>& in,
                                   const FlashBackwardOutputs<T>& g, const BackwardMode& mode, std::int64_t bh, T* dk,
                                   T* dv, const std::uint8_t* plan, BackwardScratch<T>& ws) {
  const std::int64_t n_kt = (p.Tk + kAttnTileK - 1) / kAttnTileK;
  const std::int64_t n_qt = (p.Tq + kAttnTileQ - 1) / kAttnTileQ;
  HeadGradients<T> h = start_head_gradients(p, in, g, bh, dk, dv, ws);
  bool any_partial = false;
  const std::int64_t n_active = find_active_rows(p, bh, n_qt, ws, any_partial);
  if (n_active == 0) {
    if (g.d_alpha_partial) g.d_alpha_partial[bh] = 0;
    return;
  }
  if (any_partial) gather_active_rows(p, in, h.base, n_active, ws);
  row_dots(p, in, h.base, n_active, ws);
  const std::uint8_t* head_plan = plan ? plan + bh * n_qt * n_kt : nullptr;
  for (std::int64_t kt = 0; kt < n_kt; ++kt) backward_key_tile(p, in, g, mode, h, kt, head_plan, ws);
  if (any_partial) scatter_compact_dq(p, n_qt, ws, h.dq);
  if (g.d_alpha_partial) g.d_alpha_partial[bh] = h.d_alpha;
}

// How the backward shares out the query heads: the G = H / H_kv heads of a key/value head (a group)
// split into `parts` parts of G / parts consecutive heads, each part a unit of work whose heads run
// in order on one thread and add their dK and dV into the unit's own rows. A whole group per unit
// needs no extra memory; when B·H_kv alone gives too few units to share among the cores, groups
// are split (the smallest divisor of G giving kMinBackwardUnits units, else one head a part), and
// parts 1, 2, … keep their sums in scratch until add_backward_parts adds them to part 0's, in
// order. A function of the shape alone, so the bits do not depend on the thread count; without
// grouping (G = 1) each head is a unit writing its dK, dV in place, as the op always did.
constexpr std::int64_t kMinBackwardUnits = 32;

struct BackwardSplit {
  std::int64_t group = 1;  // G = H / H_kv
  std::int64_t parts = 1;  // units per key/value head, a divisor of G
  std::int64_t units(std::int64_t kv_heads) const { return kv_heads * parts; }
};

template <class T>
BackwardSplit backward_split(const FlashAttentionParams<T>& p) {
  BackwardSplit s;
  s.group = p.H_kv > 0 ? p.H / p.H_kv : 1;  // no heads at all: nothing to share out
  s.parts = s.group;
  for (std::int64_t n = 1; n < s.group; ++n)
    if (s.group % n == 0 && p.B * p.H_kv * n >= kMinBackwardUnits) {
      s.parts = n;
      break;
    }
  return s;
}

// Unit u of the backward (part u % parts of key/value head u / parts): zeroes its dK, dV rows (the
// output's for part 0, the part's scratch rows `dk_parts`/`dv_parts` otherwise, the thread's
// scratch for a gradient not wanted) and runs its heads in order.
template <class T>
GATTN_ATTN_STEP void backward_unit(const FlashAttentionParams<T>& p, const FlashBackwardInputs<T>& in,
                                   const FlashBackwardOutputs<T>& g, const BackwardMode& mode,
                                   const BackwardSplit& split, std::int64_t u, std::vector<T>& dk_parts,
                                   std::vector<T>& dv_parts, const std::uint8_t* plan, BackwardScratch<T>& ws) {
  const std::int64_t kv = u / split.parts, part = u % split.parts, n = p.Tk * p.d;
  auto unit_rows = [&](T* out, std::vector<T>& parts, std::vector<T>& local) {
    if (!out) return zeroed_gradient(out, local, 0, n, p.d);
    if (part == 0) return zeroed_gradient(out, local, kv * p.Tk, n, p.d);
    return zeroed_gradient(parts.data(), local, (kv * (split.parts - 1) + part - 1) * p.Tk, n, p.d);
  };
  T* dk = unit_rows(g.dk, dk_parts, ws.dk_local);
  T* dv = unit_rows(g.dv, dv_parts, ws.dv_local);
  const std::int64_t heads = split.group / split.parts, first = kv * split.group + part * heads;
  for (std::int64_t bh = first; bh < first + heads; ++bh) backward_head(p, in, g, mode, bh, dk, dv, plan, ws);
}

// dK (or dV) of every key/value head: part 0's sums, in the output, plus those of parts 1, 2, … in
// order. Element by element, so any split of the loop gives the same bits.
template <class T>
void add_backward_parts(const FlashAttentionParams<T>& p, const BackwardSplit& split, T* out,
                        const std::vector<T>& parts) {
  if (!out || split.parts == 1) return;
  const std::int64_t n = p.Tk * p.d, total = p.B * p.H_kv * n, extra = split.parts - 1;
#pragma omp parallel for schedule(static) if (worth_parallel(total * extra))
  for (std::int64_t x = 0; x < total; ++x) {
    const std::int64_t kv = x / n, at = x % n;
    T sum = out[x];
    for (std::int64_t part = 0; part < extra; ++part)
      sum += parts[static_cast<std::size_t>((kv * extra + part) * n + at)];
    out[x] = sum;
  }
}

#undef GATTN_ATTN_STEP

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
  ForwardMode mode;
  mode.modulated = p.modulation_row != nullptr;
  mode.want_entropy = o.row_entropy != nullptr;
  // The modulated case that training steps take (no noise, no statistics): its vectorised loop.
  mode.fast_modulation = std::is_same_v<T, float> && mode.modulated && !p.noise && !p.hard && !p.softplus &&
                         p.dropout == T(0) && !o.modulation_moments && !o.modulation_entropy && !o.modulation_sum &&
                         !mode.want_entropy;
  // The pruning plan (empty when off); its counts for the statistics.
  const std::vector<std::uint8_t> plan =
      p.prune_threshold > 0 && p.causal ? prune_plan(p) : std::vector<std::uint8_t>();
  if (o.tile_counts && !plan.empty()) count_plan(plan, o.tile_counts);
  const std::int64_t n_kt = (Tk + kAttnTileK - 1) / kAttnTileK;
  // Per-task partial modulation-entropy and modulation sums, added per head in task order (deterministic).
  const bool mod_outputs = o.modulation_entropy || o.modulation_sum;
  std::vector<ModulationSums<T>> mod_partial(mod_outputs ? static_cast<std::size_t>(BH * n_qt) : 0);

  std::vector<T> key_panels(static_cast<std::size_t>(p.B * p.H_kv * n_kt * d * kAttnTileK));
  // Threads only when there are several tiles and enough work to pay for the team.
  const bool parallel_fwd = BH * n_qt > 1 && worth_parallel(BH * Tn * Tk * d / (p.causal ? 2 : 1));
#pragma omp parallel if (parallel_fwd)
  {
    ForwardScratch<T> ws(d);
    transposed_keys(p, key_panels);  // ends in the team's barrier: every panel is made before it is read
#pragma omp for collapse(2) schedule(dynamic)
    for (std::int64_t bh = 0; bh < BH; ++bh) {
      for (std::int64_t qt = 0; qt < n_qt; ++qt) {
        ModulationSums<T> mod;
        const std::uint8_t* tile_plan = plan.empty() ? nullptr : plan.data() + (bh * n_qt + qt) * n_kt;
        const T* head_panels = key_panels.data() + bh / (p.H / p.H_kv) * n_kt * d * kAttnTileK;
        forward_query_tile(p, o, mode, bh, qt, n_qt, tile_plan, head_panels, ws, mod);
        if (mod_outputs) mod_partial[static_cast<std::size_t>(bh * n_qt + qt)] = mod;
      }
    }
  }
  if (mod_outputs)
    for (std::int64_t bh = 0; bh < BH; ++bh) {
      ModulationSums<T> total;
      for (std::int64_t qt = 0; qt < n_qt; ++qt) {
        const ModulationSums<T>& part = mod_partial[static_cast<std::size_t>(bh * n_qt + qt)];
        total.entropy += part.entropy;
        total.sum += part.sum;
      }
      if (o.modulation_entropy) o.modulation_entropy[bh] = total.entropy;
      if (o.modulation_sum) o.modulation_sum[bh] = total.sum;
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
//     du_ij = (α dM_ij − dE · u_ij + dΣ) G(1−G)    (dh/du = −u G(1−G); Σ = Σ_ij G_ij the modulation sum);
//     da_i = Σ_j du_ij/τ, db_j = Σ_i du_ij/τ;  dα = Σ_ij dM_ij (G − 1)
//   softplus (G = log(1 + eᵘ)): dG/du = σ(u) in place of G(1−G) (no entropy output)
//   hard (M = α·1[G > θ] + 1 − α): the same du with the soft G (straight-through), dα with 1[G > θ]
//   dropout: a dropped entry has M = 1, so dM_ij = 0 there (its G still counts in Σ and the entropy)
// Skipped query rows take no part: their d_out is never read and their dq rows stay 0. A query
// tile with some active rows works on a compact copy of those rows' q and dO (gathered once per
// head), its dq accumulated compactly and scattered back at the end.
template <class T>
void flash_attention_backward(const FlashAttentionParams<T>& p, const FlashBackwardInputs<T>& in,
                              const FlashBackwardOutputs<T>& g) {
  using namespace attn_detail;
  const std::int64_t Tn = p.Tq, Tk = p.Tk, d = p.d, BH = p.B * p.H;
  BackwardMode mode;
  mode.modulated = p.modulation_row != nullptr;
  mode.fast_modulation = std::is_same_v<T, float> && mode.modulated && !p.noise && !p.hard && !p.softplus &&
                         p.dropout == T(0) && !in.d_modulation_sum;
  const std::int64_t n_qt = (Tn + kAttnTileQ - 1) / kAttnTileQ;
  const BackwardSplit split = backward_split(p);
  const std::int64_t units = split.units(p.B * p.H_kv);
  // The dK, dV sums of parts 1, 2, … of each group (empty without a split).
  const std::size_t part_rows = static_cast<std::size_t>(p.B * p.H_kv * (split.parts - 1) * Tk * d);
  std::vector<T> dk_parts(g.dk ? part_rows : 0), dv_parts(g.dv ? part_rows : 0);
  // The forward's pruning plan, rebuilt from the same inputs (empty when off).
  const std::vector<std::uint8_t> plan =
      p.prune_threshold > 0 && p.causal ? prune_plan(p) : std::vector<std::uint8_t>();
  const std::uint8_t* plan_data = plan.empty() ? nullptr : plan.data();

  const bool parallel_bwd = units > 1 && worth_parallel(BH * Tn * Tk * d);
#pragma omp parallel if (parallel_bwd)
  {
    BackwardScratch<T> ws(Tn, n_qt, d);
#pragma omp for schedule(dynamic)
    for (std::int64_t u = 0; u < units; ++u) backward_unit(p, in, g, mode, split, u, dk_parts, dv_parts, plan_data, ws);
  }
  add_backward_parts(p, split, g.dk, dk_parts);
  add_backward_parts(p, split, g.dv, dv_parts);
}

}  // namespace gattn::cpu
