// Backward kernels of the fused flash attention, deterministic by construction (no atomics; each
// gradient element is written by one thread, its sums taken in a fixed order):
//  1. flash_bwd_rowdot: D_i = Σ_x dO_ix·O_ix, one warp per row (fixed shuffle tree).
//  2. flash_bwd_dkdv: one block per (64-key block, key/value head), each warp owning 16 keys; for
//     each query head of the key/value head's group in turn (one head without grouping), walks the
//     query tiles that see its keys (all Tq queries when not causal), recomputes Sᵀ = K·Qᵀ and
//     Pᵀ = exp(Sᵀ − L) from the saved row log-sum-exp, and accumulates dV = Aᵀ·dO and
//     dK = scale·dSᵀ·Q over the whole group in registers (no atomics, no copy of K or V per query
//     head), and per query head the per-key (column) sums: d col_bias_j = Σ_i dS_ij,
//     d modulation_col_j = Σ_i du_ij, and the block's dL/dα partial.
//  3. flash_bwd_dq: one block per (64-query block, query head), each warp owning 16 queries;
//     recomputes S and P from its key/value head's K and V, accumulates dQ = scale·dS·K and the
//     per-query (row) sums: d row_bias_i = Σ_j dS_ij, d modulation_row_i = Σ_j du_ij.
// Skipped query rows (FlashParams::active) take no part: their dO is staged as zeros (in kernel 2
// their q too, which dK = dSᵀ·Q sums over: a padding row may hold NaN, and 0·NaN is NaN), their
// entries are invisible (A = dS = 0), query tiles without an active row are passed over in kernel
// 2, and kernel 3's blocks of skipped rows write zeros and return.
// The math is ops/attention/cpu/flash_attention.h's backward, with the row-entropy output and without the
// modulation entropy output (that one runs composed):
//   dA = dO·vᵀ − dH·(ln A + 1), dS = P ⊙ (dA ⊙ M − D), dM = dA ⊙ P, du = (α·dM·kept + dΣ)·G′(u)/τ,
//   dα = Σ dM·(Gv − 1), D_i = rowsum(dO ∘ O)_i + dH_i·(H_i − Σ_j A_ij); G′ = G(1 − G) for σ, σ(u) for
//   softplus; kept = 0 on entries dropout drops; dΣ the modulation sum output's gradient.
// Products run on bf16 tensor cores with f32 accumulation: Q, K, V, dO staged as bf16, P/A and dS
// rounded to bf16 as the left operand of the second product (as FlashAttention-2 does).
//
// The kernels themselves, apart from their launchers (flash_attention_bwd.cu), so that
// the emulation build (GATTN_CUDA_EMULATE) can run this very code on the CPU.
#pragma once
#include <cmath>
#include <cstdint>

#include "ops/attention/cuda/flash_attention.h"
#include "ops/attention/cuda/flash_mma.cuh"
#include "ops/attention/cuda/flash_terms.cuh"
#include "ops/attention/prune_plan.h"

namespace gattn::cuda::flash {

constexpr int kBlockRows = 64;  // keys per dK/dV block, queries per dQ block (16 per warp)
// The pruning plan's tiles are these blocks; the inner tiles (32 or 64) lie inside one plan tile.
static_assert(kBlockRows == ops::kPruneTile, "one pruning-plan tile per block");
// The inner tile the block walks (queries for dK/dV, keys for dQ): 32 for d = 128, whose two
// 16×128 f32 accumulators per warp already take 128 registers a lane.
template <int D>
constexpr int kInnerTile = D == 128 ? 32 : 64;

template <int D>
constexpr int bwd_smem_bytes() {
  return 2 * (kBlockRows + kInnerTile<D>)*(D + kPad) * 2 + 6 * kInnerTile<D> * 4;
}

// D_i = rowsum(dO ∘ O) in f32, one warp per row (0 on skipped rows, whose dO is not read).
// With the entropy output, D_i = Σ_j P_ij dP_ij also carries dH_i·(H_i − Σ_j A_ij) (the CPU kernel's
// identity), so the tiles never need a row pass of their own.
template <class In>
__global__ void flash_bwd_rowdot_kernel(const In* out, const In* d_out, FlashBackwardInputs in, FlashParams p,
                                        float* Drow, long long rows, int d) {
  const int lane = threadIdx.x % 32;
  const long long warps = static_cast<long long>(gridDim.x) * (blockDim.x / 32);
  for (long long r = blockIdx.x * static_cast<long long>(blockDim.x / 32) + threadIdx.x / 32; r < rows; r += warps) {
    if (!row_active(p, r / p.Tq, r % p.Tq)) {  // the whole warp takes this branch
      if (lane == 0) Drow[r] = 0.0f;
      continue;
    }
    float s = 0.0f;
    for (int x = lane; x < d; x += 32) s += Io<In>::load1(out + r * d + x) * Io<In>::load1(d_out + r * d + x);
    for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
    if (in.d_row_entropy) s += in.d_row_entropy[r] * (in.row_entropy[r] - in.row_asum[r]);
    if (lane == 0) Drow[r] = s;
  }
}

// The two products that open every inner tile of both kernels, sharing their steps over D: for this
// warp's 16 rows of the shared tiles X and Y (rows of D elements) and the kNT·8 rows of P and R,
// xp = X_w·Pᵀ and yr = Y_w·Rᵀ (16 × kNT·8 each, in accumulator layout; overwritten). The dK/dV
// kernel passes K, V, Q, dO (Sᵀ = K·Qᵀ and dAᵀ = V·dOᵀ), the dQ kernel Q, dO, K, V (S and dA).
template <int D, int kNT>
__device__ __forceinline__ void warp_logits_and_dA(const std::uint16_t* sX, const std::uint16_t* sY,
                                                   const std::uint16_t* sP, const std::uint16_t* sR, int warp, int lane,
                                                   float (&xp)[kNT][4], float (&yr)[kNT][4]) {
  constexpr int kStride = D + kPad;
#pragma unroll
  for (int t = 0; t < kNT; ++t)
    for (int c = 0; c < 4; ++c) xp[t][c] = yr[t][c] = 0.0f;
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    std::uint32_t ax[4], ay[4];
    load_a(sX, kStride, warp * 16, kk * 16, lane, ax);
    load_a(sY, kStride, warp * 16, kk * 16, lane, ay);
#pragma unroll
    for (int t = 0; t < kNT; ++t) {
      std::uint32_t b[2];
      load_b_nk(sP, kStride, t * 8, kk * 16, lane, b);
      mma_bf16(xp[t], ax, b);
      load_b_nk(sR, kStride, t * 8, kk * 16, lane, b);
      mma_bf16(yr[t], ay, b);
    }
  }
}

template <int D, class In>
__global__ void __launch_bounds__(kThreads)
    flash_bwd_dkdv_kernel(FlashParams p, FlashBackwardInputs in, FlashBackwardOutputs g, const float* Drow) {
  constexpr int kStride = D + kPad;
  constexpr int kQ = kInnerTile<D>;  // queries per inner tile
  constexpr int kNT = kQ / 8;        // n-tiles of Sᵀ per warp
  constexpr int kDT = D / 8;
  GATTN_FLASH_DYNAMIC_SMEM(smem_u4);
  std::uint16_t* sK = reinterpret_cast<std::uint16_t*>(smem_u4);
  std::uint16_t* sV = sK + kBlockRows * kStride;
  std::uint16_t* sQ = sV + kBlockRows * kStride;
  std::uint16_t* sdO = sQ + kQ * kStride;
  float* sL = reinterpret_cast<float*>(sdO + kQ * kStride);  // per query of the tile: lse, D, r_i, a_i, dH, active
  float* sD = sL + kQ;
  float* sRb = sD + kQ;
  float* sMr = sRb + kQ;
  float* sdH = sMr + kQ;
  int* sAct = reinterpret_cast<int*>(sdH + kQ);

  const In* q = static_cast<const In*>(p.q);
  const In* k = static_cast<const In*>(p.k);
  const In* v = static_cast<const In*>(p.v);
  const In* d_out = static_cast<const In*>(in.d_out);
  // This block's key/value head kvh: its keys in [B·H_kv·Tk] from `kvbase`, and its group, the
  // query heads kvh·group … (kvh + 1)·group − 1 of [B·H].
  const long long T = p.Tq, Tk = p.Tk, kvh = blockIdx.y, kvbase = kvh * Tk, group = p.H / p.H_kv;
  const long long j0 = static_cast<long long>(blockIdx.x) * kBlockRows;  // block 0 (the most queries) first
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const bool modulated = p.modulation_row != nullptr;

  stage_rows<kBlockRows, D, In>(sK, k + kvbase * D, j0, Tk);
  stage_rows<kBlockRows, D, In>(sV, v + kvbase * D, j0, Tk);
  // This thread's two keys (rows of Sᵀ): h = 0 → c0/c1, h = 1 → c2/c3.
  long long key_j[2];
  for (int h = 0; h < 2; ++h) key_j[h] = j0 + warp * 16 + mma::c_row(lane, 2 * h);
  // dK and dV sum over the whole group: kept in registers across its query heads.
  float dk[kDT][4], dv[kDT][4];
#pragma unroll
  for (int t = 0; t < kDT; ++t)
    for (int c = 0; c < 4; ++c) dk[t][c] = dv[t][c] = 0.0f;

  // Queries that see a key of this block: causal, i ≥ j0 and i − w < j0 + 64; else all of them.
  const long long i_first = p.causal ? j0 : 0;
  const long long i_end =
      !p.causal || p.window == 0 ? T : (j0 + kBlockRows - 1 + p.window < T ? j0 + kBlockRows - 1 + p.window : T);
  const long long n_qt = (T + kBlockRows - 1) / kBlockRows;  // the pruning plan's query tiles
  for (long long bh = kvh * group; bh < (kvh + 1) * group; ++bh) {
    // Query head bh: its queries in [B·H·Tq] from `base`, its column terms in [B·H·Tk] from `kbase`.
    const long long base = bh * T, kbase = bh * Tk;
    const float d_sum = in.d_modulation_sum ? in.d_modulation_sum[bh] : 0.0f;  // dL/dΣG of this head
    // The sequence's row flags, for staging q and dO as zeros on skipped rows (null: every row active).
    const std::int32_t* keep = p.active ? p.active + (bh / p.H) * T : nullptr;
    float cb_j[2], mc_j[2];
    for (int h = 0; h < 2; ++h) {
      const bool ok = key_j[h] < Tk;
      cb_j[h] = (ok && p.col_bias) ? p.col_bias[kbase + key_j[h]] : 0.0f;
      mc_j[h] = (ok && modulated) ? p.modulation_col[kbase + key_j[h]] : 0.0f;
    }
    float col_ds[2] = {0, 0}, col_du[2] = {0, 0}, d_alpha = 0.0f;

    for (long long i0 = i_first; i0 < i_end; i0 += kQ) {
      // A pruned pair (the same answer on every thread), as the forward passed over it.
      if (p.tile_plan && p.tile_plan[(bh * n_qt + i0 / kBlockRows) * gridDim.x + blockIdx.x] == ops::kTileSkip)
        continue;
      if (!block_has_active_row(p, bh, i0, kQ)) continue;  // a barrier too: the previous tile is no longer read
      // Both staged as zeros on skipped rows: their dS is 0, but dK = dSᵀ·Q sums over the tile's
      // rows, and 0 times a padding row's NaN or Inf is NaN.
      stage_rows<kQ, D, In>(sQ, q + base * D, i0, T, keep);
      stage_rows<kQ, D, In>(sdO, d_out + base * D, i0, T, keep);
      for (int t = threadIdx.x; t < kQ; t += kThreads) {
        const long long i = i0 + t;
        const bool ok = i < T && row_active(p, bh, i);
        sL[t] = ok ? in.lse[base + i] : 0.0f;
        sD[t] = ok ? Drow[base + i] : 0.0f;
        sRb[t] = (ok && p.row_bias) ? p.row_bias[base + i] : 0.0f;
        sMr[t] = (ok && modulated) ? p.modulation_row[base + i] : 0.0f;
        sdH[t] = (ok && in.d_row_entropy) ? in.d_row_entropy[base + i] : 0.0f;
        sAct[t] = ok;
      }
      __syncthreads();

      // Sᵀ = K_w·Qᵀ and dAᵀ = V_w·dOᵀ (16 keys × kQ queries per warp).
      float st[kNT][4], dat[kNT][4];
      warp_logits_and_dA<D, kNT>(sK, sV, sQ, sdO, warp, lane, st, dat);
      // Elementwise: st ← Aᵀ (for dV), dat ← dSᵀ (for dK); column sums per key.
#pragma unroll
      for (int t = 0; t < kNT; ++t)
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          const int h = c >> 1, col = t * 8 + mma::c_col(lane, c);
          const long long i = i0 + col, j = key_j[h];
          float a = 0.0f, ds = 0.0f;
          if (sAct[col] && visible(p, i, j)) {
            const float S = st[t][c] * p.scale + cb_j[h] + sRb[col];
            const float pij = expf(S - sL[col]);
            const float dH = sdH[col];
            float da = dat[t][c];
            if (modulated) {
              const Modulation pg = modulation(p, sMr[col], mc_j[h], bh, i, j);
              a = pij * pg.M;
              if (dH != 0.0f && a > 0.0f) da -= dH * ((S - sL[col]) + logf(pg.M) + 1.0f);  // ∂H/∂A = −(ln A + 1)
              ds = pij * (da * pg.M - sD[col]);
              const float dM = da * pij;
              d_alpha += dM * (pg.Gv - 1.0f);  // 0 where dropped (Gv = 1)
              col_du[h] += modulation_du(p, pg, bh, dM, d_sum);
            } else {
              a = pij;
              da -= dH * ((S - sL[col]) + 1.0f);
              ds = pij * (da - sD[col]);
            }
            col_ds[h] += ds;
          }
          st[t][c] = a;
          dat[t][c] = ds;
        }
        // dV += Aᵀ·dO, dK += dSᵀ·Q (scale applied at the end).
#pragma unroll
      for (int kk = 0; kk < kQ / 16; ++kk) {
        std::uint32_t aa[4], as[4];
        a_from_c(st, kk, aa);
        a_from_c(dat, kk, as);
#pragma unroll
        for (int t = 0; t < kDT; ++t) {
          std::uint32_t b[2];
          load_b_kn(sdO, kStride, kk * 16, t * 8, lane, b);
          mma_bf16(dv[t], aa, b);
          load_b_kn(sQ, kStride, kk * 16, t * 8, lane, b);
          mma_bf16(dk[t], as, b);
        }
      }
    }

    // Query head bh's column sums and dL/dα partial.
    for (int h = 0; h < 2; ++h) {
      const float cds = quad_sum(col_ds[h]), cdu = quad_sum(col_du[h]);
      const long long j = key_j[h];
      if (j >= Tk || mma::tig_of(lane) != 0) continue;
      if (g.d_col_bias) g.d_col_bias[kbase + j] = cds;
      if (g.d_modulation_col) g.d_modulation_col[kbase + j] = cdu;
    }
    if (g.d_alpha_partial) {
      GATTN_FLASH_SHARED float warp_part[kWarps];
      for (int off = 16; off > 0; off >>= 1) d_alpha += __shfl_xor_sync(0xffffffffu, d_alpha, off);
      if (lane == 0) warp_part[warp] = d_alpha;
      __syncthreads();
      if (threadIdx.x == 0) {
        float tot = 0.0f;
        for (int w = 0; w < kWarps; ++w) tot += warp_part[w];
        g.d_alpha_partial[bh * gridDim.x + blockIdx.x] = tot;
      }
      __syncthreads();  // warp_part is read before the next query head writes it
    }
  }

  In* dk_out = static_cast<In*>(g.dk);
  In* dv_out = static_cast<In*>(g.dv);
  for (int h = 0; h < 2; ++h) {
    const long long j = key_j[h];
    if (j >= Tk) continue;
#pragma unroll
    for (int t = 0; t < kDT; ++t) {
      const int col = t * 8 + mma::c_col(lane, 2 * h);
      Io<In>::store2(dk_out + (kvbase + j) * D + col, dk[t][2 * h] * p.scale, dk[t][2 * h + 1] * p.scale);
      Io<In>::store2(dv_out + (kvbase + j) * D + col, dv[t][2 * h], dv[t][2 * h + 1]);
    }
  }
}

template <int D, class In>
__global__ void __launch_bounds__(kThreads)
    flash_bwd_dq_kernel(FlashParams p, FlashBackwardInputs in, FlashBackwardOutputs g, const float* Drow) {
  constexpr int kStride = D + kPad;
  constexpr int kK = kInnerTile<D>;  // keys per inner tile
  constexpr int kNT = kK / 8;
  constexpr int kDT = D / 8;
  GATTN_FLASH_DYNAMIC_SMEM(smem_u4);
  std::uint16_t* sQ = reinterpret_cast<std::uint16_t*>(smem_u4);
  std::uint16_t* sdO = sQ + kBlockRows * kStride;
  std::uint16_t* sK = sdO + kBlockRows * kStride;
  std::uint16_t* sV = sK + kK * kStride;
  float* sColBias = reinterpret_cast<float*>(sV + kK * kStride);  // c_j
  float* sMc = sColBias + kK;                                     // b_j

  const In* q = static_cast<const In*>(p.q);
  const In* k = static_cast<const In*>(p.k);
  const In* v = static_cast<const In*>(p.v);
  const In* d_out = static_cast<const In*>(in.d_out);
  // Query head bh: its queries in [B·H·Tq] from `base`, its column terms in [B·H·Tk] from `kbase`,
  // its key/value head's rows in [B·H_kv·Tk] from `kvbase`.
  const long long T = p.Tq, Tk = p.Tk, bh = blockIdx.y, base = bh * T, kbase = bh * Tk;
  const long long kvbase = bh / (p.H / p.H_kv) * Tk;
  const float d_sum = in.d_modulation_sum ? in.d_modulation_sum[bh] : 0.0f;  // dL/dΣG of this head
  const long long qb = static_cast<long long>(gridDim.x) - 1 - blockIdx.x;   // the longest query blocks first
  const long long i0 = qb * kBlockRows;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const bool modulated = p.modulation_row != nullptr;
  In* dq_out = static_cast<In*>(g.dq);

  if (!block_has_active_row(p, bh, i0, kBlockRows)) {
    // Every row skipped: zero dq and row-term gradients, no product.
    for (int t = threadIdx.x; t < kBlockRows * (D / 2); t += kThreads) {
      const long long i = i0 + t / (D / 2);
      if (i < T) Io<In>::store2(dq_out + (base + i) * D + 2 * (t % (D / 2)), 0.0f, 0.0f);
    }
    for (int t = threadIdx.x; t < kBlockRows; t += kThreads) {
      const long long i = i0 + t;
      if (i >= T) continue;
      if (g.d_row_bias) g.d_row_bias[base + i] = 0.0f;
      if (g.d_modulation_row) g.d_modulation_row[base + i] = 0.0f;
    }
    return;
  }

  stage_rows<kBlockRows, D, In>(sQ, q + base * D, i0, T);
  stage_rows<kBlockRows, D, In>(sdO, d_out + base * D, i0, T, p.active ? p.active + (bh / p.H) * T : nullptr);
  long long row_i[2];
  bool act[2];  // in range and not skipped
  float L_i[2], D_i[2], rb_i[2], mr_i[2], dH_i[2];
  for (int h = 0; h < 2; ++h) {
    row_i[h] = i0 + warp * 16 + mma::c_row(lane, 2 * h);
    const bool ok = act[h] = row_i[h] < T && row_active(p, bh, row_i[h]);
    L_i[h] = ok ? in.lse[base + row_i[h]] : 0.0f;
    D_i[h] = ok ? Drow[base + row_i[h]] : 0.0f;
    rb_i[h] = (ok && p.row_bias) ? p.row_bias[base + row_i[h]] : 0.0f;
    mr_i[h] = (ok && modulated) ? p.modulation_row[base + row_i[h]] : 0.0f;
    dH_i[h] = (ok && in.d_row_entropy) ? in.d_row_entropy[base + row_i[h]] : 0.0f;
  }
  float dq[kDT][4];
#pragma unroll
  for (int t = 0; t < kDT; ++t)
    for (int c = 0; c < 4; ++c) dq[t][c] = 0.0f;
  float row_ds[2] = {0, 0}, row_du[2] = {0, 0};

  const long long j_first = first_visible_key(p, i0);
  const long long j_end = end_visible_key(p, i0, kBlockRows);
  const long long n_kt = (Tk + kBlockRows - 1) / kBlockRows;  // the pruning plan's key tiles
  for (long long j0 = j_first / kK * kK; j0 < j_end; j0 += kK) {
    if (p.tile_plan && p.tile_plan[(bh * gridDim.x + qb) * n_kt + j0 / kBlockRows] == ops::kTileSkip) continue;
    __syncthreads();
    stage_rows<kK, D, In>(sK, k + kvbase * D, j0, Tk);
    stage_rows<kK, D, In>(sV, v + kvbase * D, j0, Tk);
    for (int t = threadIdx.x; t < kK; t += kThreads) {
      const long long j = j0 + t;
      const bool ok = j < Tk;
      sColBias[t] = (ok && p.col_bias) ? p.col_bias[kbase + j] : 0.0f;
      sMc[t] = (ok && modulated) ? p.modulation_col[kbase + j] : 0.0f;
    }
    __syncthreads();

    // S = Q_w·Kᵀ and dA = dO_w·Vᵀ (16 queries × kK keys per warp).
    float s[kNT][4], da[kNT][4];
    warp_logits_and_dA<D, kNT>(sQ, sdO, sK, sV, warp, lane, s, da);
#pragma unroll
    for (int t = 0; t < kNT; ++t)
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int h = c >> 1, col = t * 8 + mma::c_col(lane, c);
        const long long i = row_i[h], j = j0 + col;
        float ds = 0.0f;
        if (act[h] && visible(p, i, j)) {
          const float S = s[t][c] * p.scale + sColBias[col] + rb_i[h];
          const float pij = expf(S - L_i[h]);
          float dA = da[t][c];
          if (modulated) {
            const Modulation pg = modulation(p, mr_i[h], sMc[col], bh, i, j);
            if (dH_i[h] != 0.0f && pij * pg.M > 0.0f) dA -= dH_i[h] * ((S - L_i[h]) + logf(pg.M) + 1.0f);
            ds = pij * (dA * pg.M - D_i[h]);
            row_du[h] += modulation_du(p, pg, bh, dA * pij, d_sum);
          } else {
            dA -= dH_i[h] * ((S - L_i[h]) + 1.0f);
            ds = pij * (dA - D_i[h]);
          }
          row_ds[h] += ds;
        }
        s[t][c] = ds;
      }
      // dQ += dS·K (scale applied at the end).
#pragma unroll
    for (int kk = 0; kk < kK / 16; ++kk) {
      std::uint32_t a[4];
      a_from_c(s, kk, a);
#pragma unroll
      for (int t = 0; t < kDT; ++t) {
        std::uint32_t b[2];
        load_b_kn(sK, kStride, kk * 16, t * 8, lane, b);
        mma_bf16(dq[t], a, b);
      }
    }
  }

  for (int h = 0; h < 2; ++h) {
    const float rds = quad_sum(row_ds[h]), rdu = quad_sum(row_du[h]);
    const long long i = row_i[h];
    if (i >= T) continue;
#pragma unroll
    for (int t = 0; t < kDT; ++t) {
      const int col = t * 8 + mma::c_col(lane, 2 * h);
      Io<In>::store2(dq_out + (base + i) * D + col, dq[t][2 * h] * p.scale, dq[t][2 * h + 1] * p.scale);
    }
    if (mma::tig_of(lane) == 0) {
      if (g.d_row_bias) g.d_row_bias[base + i] = rds;
      if (g.d_modulation_row) g.d_modulation_row[base + i] = rdu;
    }
  }
}

}  // namespace gattn::cuda::flash
