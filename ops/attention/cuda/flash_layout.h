// Fragment layouts of the tensor-core instruction the flash-attention kernels use,
// mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 (PTX ISA, "Matrix Fragments for
// mma.m16n8k16" with .bf16 operands): which (row, column) of A (16×16), B (16×8) and C/D (16×8)
// lane `lane` holds in its register `reg`, half `half` (bf16 operands pack two values per 32-bit
// register, the lower column/row index in the low 16 bits).
//
// Plain constexpr functions, host and device, so tests/unit/test_flash_layout.cpp can pin them to
// the documented tables on a machine without a GPU, and the kernels index with the same code.
#pragma once

#include "core/tensor/bf16.h"  // GATTN_HD

namespace gattn::cuda::mma {

// A lane's group (rows it holds) and its thread-in-group (columns it holds).
GATTN_HD constexpr int group_of(int lane) { return lane >> 2; }
GATTN_HD constexpr int tig_of(int lane) { return lane & 3; }

// A, 16×16 row-major, four registers a0..a3 of two bf16 each:
//   a0: (g, 2t + h)   a1: (g + 8, 2t + h)   a2: (g, 2t + 8 + h)   a3: (g + 8, 2t + 8 + h)
GATTN_HD constexpr int a_row(int lane, int reg) { return group_of(lane) + ((reg & 1) ? 8 : 0); }
GATTN_HD constexpr int a_col(int lane, int reg, int half) { return 2 * tig_of(lane) + ((reg & 2) ? 8 : 0) + half; }

// B, 16×8 "col" (element (k, n) of the K×N operand), two registers b0, b1:
//   b0: (k = 2t + h, n = g)   b1: (k = 2t + 8 + h, n = g)
GATTN_HD constexpr int b_k(int lane, int reg, int half) { return 2 * tig_of(lane) + (reg ? 8 : 0) + half; }
GATTN_HD constexpr int b_n(int lane) { return group_of(lane); }

// C/D, 16×8 f32, four registers c0..c3:
//   c0: (g, 2t)   c1: (g, 2t + 1)   c2: (g + 8, 2t)   c3: (g + 8, 2t + 1)
GATTN_HD constexpr int c_row(int lane, int reg) { return group_of(lane) + ((reg & 2) ? 8 : 0); }
GATTN_HD constexpr int c_col(int lane, int reg) { return 2 * tig_of(lane) + (reg & 1); }

// The FlashAttention-2 register reuse: the C fragments of two neighbouring n-tiles (columns
// 16·kk … 16·kk + 15 of a 16×N product) are exactly the A fragment of k-step kk of the next
// product. A register `reg` takes C tile 2·kk + (reg >> 1), values c[2·(reg & 1)] (low half) and
// c[2·(reg & 1) + 1] (high half). These give that tile and value index, for the test to check
// against the two tables above.
GATTN_HD constexpr int a_from_c_tile(int kk, int reg) { return 2 * kk + (reg >> 1); }
GATTN_HD constexpr int a_from_c_value(int reg, int half) { return 2 * (reg & 1) + half; }

}  // namespace gattn::cuda::mma
