// Forward kernel of the fused flash attention (FlashAttention-2 schedule): one block of 4 warps per
// (64-query block, batch·query head), reading the keys and values of the query head's key/value
// head in place (grouped-query attention: no copy per query head); each warp owns 16 query rows
// and walks the visible 64-key tiles (up to the causal limit, or all Tk keys with the tail tile
// masked when not causal) with an online softmax. S = Q·Kᵀ and A·V run on bf16 tensor cores
// (mma.sync m16n8k16, f32 accumulate); the bias terms, the mask, the modulation and the optional
// statistics are applied to the S fragments in registers, so no T×T tensor exists. A block whose
// query rows are all skipped (FlashParams::active) writes zeros and returns; within a block a
// skipped row sees no key (P = 0 exactly, its running max stays −inf) and its outputs are written
// as zeros.
//
// Per row the kernel keeps (as ops/attention/cpu/flash_attention.h): the running max m, l = Σ exp(S − m),
// and with stats e0 = Σ w, e1 = Σ w·(S − m + ln M) over w = exp(S − m)·M, from which
// H = ln l · e0/l − e1/l. Per-lane partials of l, e0, e1 are rescaled with the row's (quad-wide)
// max and summed over the quad once, at the end.
//
// The kernel itself, apart from its launcher (flash_attention_fwd.cu), so that
// the emulation build (GATTN_CUDA_EMULATE) can run this very code on the CPU.
#pragma once
#include <cmath>
#include <cstdint>

#include "ops/attention/cuda/flash_attention.h"
#include "ops/attention/cuda/flash_mma.cuh"
#include "ops/attention/cuda/flash_terms.cuh"
#include "ops/attention/prune_plan.h"

namespace gattn::cuda::flash {

constexpr int kBlockQ = 64;  // query rows per block (16 per warp)
constexpr int kBlockK = 64;  // keys per tile
static_assert(kBlockQ == ops::kPruneTile && kBlockK == ops::kPruneTile, "one pruning-plan entry per block tile pair");

template <int D>
constexpr int fwd_smem_bytes() {
  return 3 * kBlockQ * (D + kPad) * 2 + 2 * kBlockK * 4;  // Q, K, V tiles + two per-key rows
}

template <int D, class In>
__global__ void __launch_bounds__(kThreads) flash_fwd_kernel(FlashParams p, FlashForwardOutputs o) {
  constexpr int kStride = D + kPad;
  constexpr int kNT = kBlockK / 8;  // n-tiles of S per warp
  constexpr int kDT = D / 8;        // n-tiles of O per warp
  GATTN_FLASH_DYNAMIC_SMEM(smem_u4);
  std::uint16_t* sQ = reinterpret_cast<std::uint16_t*>(smem_u4);
  std::uint16_t* sK = sQ + kBlockQ * kStride;
  std::uint16_t* sV = sK + kBlockK * kStride;
  float* sColBias = reinterpret_cast<float*>(sV + kBlockK * kStride);  // c_j
  float* sModCol = sColBias + kBlockK;                                 // b_j

  const In* q = static_cast<const In*>(p.q);
  const In* k = static_cast<const In*>(p.k);
  const In* v = static_cast<const In*>(p.v);
  const long long T = p.Tq, Tk = p.Tk;
  const long long bh = blockIdx.y;
  const long long qb = static_cast<long long>(gridDim.x) - 1 - blockIdx.x;  // the longest (last) query blocks first
  const long long i0 = qb * kBlockQ;
  const long long base = bh * T;                      // row offset of this head's queries in [B·H·Tq]
  const long long kbase = bh * Tk;                    // and of its column terms in [B·H·Tk]
  const long long kvbase = bh / (p.H / p.H_kv) * Tk;  // its key/value head's rows in [B·H_kv·Tk]
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const bool modulated = p.modulation_row != nullptr;
  const bool stats = o.row_entropy != nullptr;
  In* out = static_cast<In*>(o.out);

  if (!block_has_active_row(p, bh, i0, kBlockQ)) {
    // Every row skipped: zero outputs and statistics, no product.
    for (int t = threadIdx.x; t < kBlockQ * (D / 2); t += kThreads) {
      const long long i = i0 + t / (D / 2);
      if (i < T) Io<In>::store2(out + (base + i) * D + 2 * (t % (D / 2)), 0.0f, 0.0f);
    }
    for (int t = threadIdx.x; t < kBlockQ; t += kThreads) {
      const long long i = i0 + t;
      if (i >= T) continue;
      o.lse[base + i] = 0.0f;
      if (stats) {
        o.row_entropy[base + i] = 0.0f;
        o.row_asum[base + i] = 0.0f;
        if (o.row_sink) o.row_sink[base + i] = 0.0f;
      }
    }
    if (o.modulation_moments && threadIdx.x == 0)
      o.modulation_moments[bh * gridDim.x + qb] = FlashMoments{0, 0, 0, 0, 0};
    if (o.modulation_sum_partial && threadIdx.x == 0) o.modulation_sum_partial[bh * gridDim.x + qb] = 0.0f;
    return;
  }

  stage_rows<kBlockQ, D, In>(sQ, q + base * D, i0, T);

  // This thread's two rows: h = 0 → c0/c1 (row g), h = 1 → c2/c3 (row g + 8). act: computed (in
  // range and not skipped).
  long long row_i[2];
  bool act[2];
  float rb_i[2], mr_i[2];
  for (int h = 0; h < 2; ++h) {
    row_i[h] = i0 + warp * 16 + mma::c_row(lane, 2 * h);
    act[h] = row_i[h] < T && row_active(p, bh, row_i[h]);
    rb_i[h] = (p.row_bias && act[h]) ? p.row_bias[base + row_i[h]] : 0.0f;
    mr_i[h] = (modulated && act[h]) ? p.modulation_row[base + row_i[h]] : 0.0f;
  }
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0, 0}, e0[2] = {0, 0}, e1[2] = {0, 0};
  float s0[2] = {-INFINITY, -INFINITY}, M0[2] = {1, 1};  // key 0's logit and modulation (sink)
  double g_sum = 0, g_sq = 0;
  long long g_cnt = 0, g_lo = 0, g_hi = 0;
  float g_soft = 0;  // Σ of the soft G (the modulation sum output)
  float acc[kDT][4];
#pragma unroll
  for (int t = 0; t < kDT; ++t)
    for (int c = 0; c < 4; ++c) acc[t][c] = 0.0f;

  __syncthreads();
  std::uint32_t qa[D / 16][4];  // this warp's Q rows as A fragments, reused for every key tile
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) load_a(sQ, kStride, warp * 16, kk * 16, lane, qa[kk]);

  const long long j_first = first_visible_key(p, i0);
  const long long j_end = end_visible_key(p, i0, kBlockQ);  // keys [j_first, j_end) can be visible
  const long long n_kt = (Tk + kBlockK - 1) / kBlockK;
  for (long long j0 = j_first / kBlockK * kBlockK; j0 < j_end; j0 += kBlockK) {
    // A pruned pair: the whole block passes over it (the plan entry is the same for every thread).
    if (p.tile_plan && p.tile_plan[(bh * gridDim.x + qb) * n_kt + j0 / kBlockK] == ops::kTileSkip) continue;
    __syncthreads();  // the previous tile's K, V and key terms are no longer read
    stage_rows<kBlockK, D, In>(sK, k + kvbase * D, j0, Tk);
    stage_rows<kBlockK, D, In>(sV, v + kvbase * D, j0, Tk);
    for (int t = threadIdx.x; t < kBlockK; t += kThreads) {
      const long long j = j0 + t;
      const bool ok = j < Tk;
      sColBias[t] = (ok && p.col_bias) ? p.col_bias[kbase + j] : 0.0f;
      sModCol[t] = (ok && modulated) ? p.modulation_col[kbase + j] : 0.0f;
    }
    __syncthreads();

    float s[kNT][4];
#pragma unroll
    for (int t = 0; t < kNT; ++t)
      for (int c = 0; c < 4; ++c) s[t][c] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
      for (int t = 0; t < kNT; ++t) {
        std::uint32_t b[2];
        load_b_nk(sK, kStride, t * 8, kk * 16, lane, b);
        mma_bf16(s[t], qa[kk], b);
      }

    // Full logits, −inf where hidden or the row is skipped; the tile's row max.
    float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int t = 0; t < kNT; ++t)
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int h = c >> 1, col = t * 8 + mma::c_col(lane, c);
        const long long j = j0 + col;
        const float S = s[t][c] * p.scale + sColBias[col] + rb_i[h];
        s[t][c] = act[h] && visible(p, row_i[h], j) ? S : -INFINITY;
        tile_max[h] = fmaxf(tile_max[h], s[t][c]);
      }
    float corr[2], m_use[2];
    for (int h = 0; h < 2; ++h) {
      const float m_new = fmaxf(m[h], quad_max(tile_max[h]));
      m_use[h] = m_new == -INFINITY ? 0.0f : m_new;  // a row with nothing visible yet stays at zero
      corr[h] = expf(m[h] - m_use[h]);               // 0 on the row's first visible tile
      if (stats) {
        // e1 is relative to the running max: moving it from m to m' shifts each (S − m) by m − m'.
        e1[h] = corr[h] == 0.0f ? 0.0f : corr[h] * (e1[h] + (m[h] - m_use[h]) * e0[h]);
        e0[h] *= corr[h];
      }
      l[h] *= corr[h];
      m[h] = m_new;
    }
#pragma unroll
    for (int t = 0; t < kNT; ++t)
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int h = c >> 1, col = t * 8 + mma::c_col(lane, c);
        const float S = s[t][c];
        const float pij = expf(S - m_use[h]);  // 0 where hidden (S = −inf)
        l[h] += pij;
        float w = pij, lnM = 0.0f;
        if (S != -INFINITY) {
          const long long j = j0 + col;
          float M = 1.0f;
          if (modulated) {
            const Modulation g = modulation(p, mr_i[h], sModCol[col], bh, row_i[h], j);
            M = g.M;
            w = pij * M;
            if (o.modulation_moments) {
              g_sum += g.Gv;
              g_sq += static_cast<double>(g.Gv) * g.Gv;
              ++g_cnt;
              g_lo += g.Gv < 0.1f;
              g_hi += g.Gv > 0.9f;
            }
            if (o.modulation_sum_partial) g_soft += g.G;
            if (stats) lnM = logf(M);
          }
          if (stats) {
            if (w > 0.0f) {  // 0·ln 0 = 0
              e0[h] += w;
              e1[h] += w * ((S - m_use[h]) + lnM);
            }
            if (j == 0) {
              s0[h] = S;
              M0[h] = M;
            }
          }
        }
        s[t][c] = w;
      }
#pragma unroll
    for (int t = 0; t < kDT; ++t)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[t][c] *= corr[c >> 1];
        // acc += W·V: W's C fragments are the A fragments of this product.
#pragma unroll
    for (int kk = 0; kk < kBlockK / 16; ++kk) {
      std::uint32_t a[4];
      a_from_c(s, kk, a);
#pragma unroll
      for (int t = 0; t < kDT; ++t) {
        std::uint32_t b[2];
        load_b_kn(sV, kStride, kk * 16, t * 8, lane, b);
        mma_bf16(acc[t], a, b);
      }
    }
  }

  for (int h = 0; h < 2; ++h) {
    const float lq = quad_sum(l[h]);
    const float e0q = stats ? quad_sum(e0[h]) : 0.0f, e1q = stats ? quad_sum(e1[h]) : 0.0f;
    const long long i = row_i[h];
    const bool in = act[h];                     // a skipped row has l = 0: its outputs are set to 0 below
    const float inv_l = in ? 1.0f / lq : 0.0f;  // every computed row sees its max key, so l ≥ 1
    const float L = in ? m[h] + logf(lq) : 0.0f;
    float sink = 0.0f;
    // Causal, query 0 is left out of the sink (it sees key 0 alone); not causal, every query counts.
    if (stats && in && s0[h] != -INFINITY && (i >= 1 || !p.causal)) sink = expf(s0[h] - L) * M0[h];
    if (stats) sink = quad_sum(sink);  // only the lane holding column 0 has a non-zero term
    if (i >= T) continue;
#pragma unroll
    for (int t = 0; t < kDT; ++t) {
      const int col = t * 8 + mma::c_col(lane, 2 * h);
      Io<In>::store2(out + (base + i) * D + col, in ? acc[t][2 * h] * inv_l : 0.0f,
                     in ? acc[t][2 * h + 1] * inv_l : 0.0f);
    }
    if (mma::tig_of(lane) == 0) {
      o.lse[base + i] = L;
      if (stats) {
        const float asum = e0q * inv_l;
        o.row_entropy[base + i] = in ? logf(lq) * asum - e1q * inv_l : 0.0f;
        o.row_asum[base + i] = asum;
        if (o.row_sink) o.row_sink[base + i] = sink;
      }
    }
  }

  if (o.modulation_sum_partial) {
    // Block total in a fixed order: a butterfly over each warp, then the four warps in order.
    GATTN_FLASH_SHARED float soft_part[kWarps];
    for (int off = 16; off > 0; off >>= 1) g_soft += __shfl_xor_sync(0xffffffffu, g_soft, off);
    if (lane == 0) soft_part[warp] = g_soft;
    __syncthreads();
    if (threadIdx.x == 0) {
      float tot = 0;
      for (int w = 0; w < kWarps; ++w) tot += soft_part[w];
      o.modulation_sum_partial[bh * gridDim.x + qb] = tot;
    }
  }

  if (o.modulation_moments) {
    // Block total in a fixed order: a butterfly over each warp, then the four warps in order.
    GATTN_FLASH_SHARED FlashMoments warp_part[kWarps];
    for (int off = 16; off > 0; off >>= 1) {
      g_sum += __shfl_xor_sync(0xffffffffu, g_sum, off);
      g_sq += __shfl_xor_sync(0xffffffffu, g_sq, off);
      g_cnt += __shfl_xor_sync(0xffffffffu, g_cnt, off);
      g_lo += __shfl_xor_sync(0xffffffffu, g_lo, off);
      g_hi += __shfl_xor_sync(0xffffffffu, g_hi, off);
    }
    if (lane == 0) warp_part[warp] = FlashMoments{g_sum, g_sq, g_cnt, g_lo, g_hi};
    __syncthreads();
    if (threadIdx.x == 0) {
      FlashMoments tot{0, 0, 0, 0, 0};
      for (int w = 0; w < kWarps; ++w) {
        tot.sum += warp_part[w].sum;
        tot.sum_sq += warp_part[w].sum_sq;
        tot.count += warp_part[w].count;
        tot.below_0_1 += warp_part[w].below_0_1;
        tot.above_0_9 += warp_part[w].above_0_9;
      }
      o.modulation_moments[bh * gridDim.x + qb] = tot;
    }
  }
}

}  // namespace gattn::cuda::flash
