// The tile plan of adaptive computation pruning (AttentionOptions::prune_threshold), shared by the CPU
// kernels (ops/attention/cpu/flash_prune.h) and the CUDA ones (ops/attention/cuda/flash_prune.cuh):
// one byte per (head, 64-query tile, 64-key tile), the same grid on both devices whatever tiles a
// kernel walks inside it, so the forward and both backward passes skip exactly the same entries.
//
// Per query head, with s_ij = scale·q_i·k_j and the column term c_j (col_bias, 0 without one):
//   P_ij = exp(S_ij − lse_i) ≤ exp(S_ij − S_ii)                     (lse_i ≥ S_ii: key i is visible to i)
//   S_ij − S_ii = s_ij − s_ii + c_j − c_i                           (the row term r_i cancels)
//              ≤ scale·‖q_i‖·Kmax_J − s_ii + Cmax_J − c_i =: U_iJ     (Cauchy–Schwarz, j in key tile J)
// with Kmax_J = max_{j∈J} ‖k_j‖ and Cmax_J = max_{j∈J} c_j. The pair (I, J) is skipped when
// max over the active rows i of query tile I of U_iJ < ln θ; then every P_ij of the pair is < θ.
// The diagonal pair (J = I) is never skipped. Everything is evaluated in double from the tensors'
// values: O(T·d) per head for the norms and diagonal logits, O(64) per tile pair for the maxima.
#pragma once
#include <cstdint>

namespace gattn::ops {

constexpr std::int64_t kPruneTile = 64;  // queries and keys per tile of the plan

// A pair's entry in the plan: outside the forward's loop (no active row sees a key of it), walked,
// or skipped by the pruning.
enum PruneTileState : std::uint8_t { kTileUnseen = 0, kTileVisit = 1, kTileSkip = 2 };

}  // namespace gattn::ops
