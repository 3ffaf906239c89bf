// The mma.sync m16n8k16 fragment layouts the CUDA flash-attention kernels index with
// (ops/attention/cuda/flash_layout.h), pinned here on the CPU to the PTX ISA's tables, which are written per
// element a_i / b_i / c_i (i the element's index in the lane's fragment, two bf16 per register):
//   A: row = g for i ∈ {0,1,4,5}, g + 8 otherwise; col = 2t + (i & 1), + 8 for i ≥ 4
//   B: row (k) = 2t + (i & 1), + 8 for i ≥ 2; col (n) = g
//   C: row = g for i < 2, g + 8 otherwise; col = 2t + (i & 1)
// with g = lane / 4 (groupID) and t = lane % 4 (threadID_in_group). Also checks that every element
// of each tile is held by exactly one (lane, register, half), and that the C fragments of two
// neighbouring n-tiles are the A fragment of the next product (the FlashAttention-2 reuse).
#include <gtest/gtest.h>

#include <array>

#include "ops/attention/cuda/flash_layout.h"

namespace gattn {
namespace {

using namespace cuda::mma;

TEST(FlashLayout, MatchesThePtxTables) {
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    for (int i = 0; i < 8; ++i) {  // A elements a0..a7: register i / 2, half i % 2
      const int want_row = (i < 2 || (i >= 4 && i < 6)) ? g : g + 8;
      const int want_col = t * 2 + (i & 1) + (i >= 4 ? 8 : 0);
      EXPECT_EQ(a_row(lane, i / 2), want_row) << "lane " << lane << " a" << i;
      EXPECT_EQ(a_col(lane, i / 2, i % 2), want_col) << "lane " << lane << " a" << i;
    }
    for (int i = 0; i < 4; ++i) {  // B elements b0..b3
      EXPECT_EQ(b_k(lane, i / 2, i % 2), t * 2 + (i & 1) + (i >= 2 ? 8 : 0)) << "lane " << lane << " b" << i;
      EXPECT_EQ(b_n(lane), g);
    }
    for (int i = 0; i < 4; ++i) {  // C elements c0..c3 (one f32 each)
      EXPECT_EQ(c_row(lane, i), i < 2 ? g : g + 8) << "lane " << lane << " c" << i;
      EXPECT_EQ(c_col(lane, i), t * 2 + (i & 1)) << "lane " << lane << " c" << i;
    }
  }
}

TEST(FlashLayout, EveryElementHasExactlyOneOwner) {
  std::array<int, 16 * 16> a{};
  std::array<int, 16 * 8> b{}, c{};
  for (int lane = 0; lane < 32; ++lane) {
    for (int r = 0; r < 4; ++r)
      for (int h = 0; h < 2; ++h) ++a[static_cast<std::size_t>(a_row(lane, r) * 16 + a_col(lane, r, h))];
    for (int r = 0; r < 2; ++r)
      for (int h = 0; h < 2; ++h) ++b[static_cast<std::size_t>(b_k(lane, r, h) * 8 + b_n(lane))];
    for (int r = 0; r < 4; ++r) ++c[static_cast<std::size_t>(c_row(lane, r) * 8 + c_col(lane, r))];
  }
  for (int x : a) EXPECT_EQ(x, 1);
  for (int x : b) EXPECT_EQ(x, 1);
  for (int x : c) EXPECT_EQ(x, 1);
}

TEST(FlashLayout, AccumulatorTilesAreTheNextProductsAFragment) {
  for (int lane = 0; lane < 32; ++lane)
    for (int kk = 0; kk < 4; ++kk)
      for (int r = 0; r < 4; ++r)
        for (int h = 0; h < 2; ++h) {
          // A element (row, column kk·16 + col) of the 16×64 left operand …
          const int row = a_row(lane, r), col = kk * 16 + a_col(lane, r, h);
          // … must be the C value this lane holds there.
          const int tile = a_from_c_tile(kk, r), v = a_from_c_value(r, h);
          EXPECT_EQ(c_row(lane, v), row) << "lane " << lane << " kk " << kk << " reg " << r << " half " << h;
          EXPECT_EQ(tile * 8 + c_col(lane, v), col) << "lane " << lane << " kk " << kk << " reg " << r << " half " << h;
        }
}

// A full product assembled from the fragments as the hardware defines it (each lane's C element is
// Σ_k A(row, k)·B(k, col) over the tile) reproduces the plain matrix product, i.e. the helpers'
// rows and columns are consistent with one another and not only each with its own table.
TEST(FlashLayout, FragmentsAssembleAPlainProduct) {
  int A[16][16], B[16][8];
  for (int i = 0; i < 16; ++i)
    for (int k = 0; k < 16; ++k) A[i][k] = (i * 7 + k * 3) % 11 - 5;
  for (int k = 0; k < 16; ++k)
    for (int n = 0; n < 8; ++n) B[k][n] = (k * 5 + n * 2) % 7 - 3;
  // Gather the fragments lane by lane, then compute each lane's C values from the gathered pieces.
  int fa[32][4][2], fb[32][2][2];
  for (int lane = 0; lane < 32; ++lane) {
    for (int r = 0; r < 4; ++r)
      for (int h = 0; h < 2; ++h) fa[lane][r][h] = A[a_row(lane, r)][a_col(lane, r, h)];
    for (int r = 0; r < 2; ++r)
      for (int h = 0; h < 2; ++h) fb[lane][r][h] = B[b_k(lane, r, h)][b_n(lane)];
  }
  for (int lane = 0; lane < 32; ++lane)
    for (int v = 0; v < 4; ++v) {
      const int row = c_row(lane, v), col = c_col(lane, v);
      int want = 0;
      for (int k = 0; k < 16; ++k) want += A[row][k] * B[k][col];
      // The same sum from fragment pieces: A(row, k) lives in the lane with group row % 8, B(k, col)
      // in the lane with group col.
      int got = 0;
      for (int k = 0; k < 16; ++k) {
        int a_val = 0, b_val = 0, found_a = 0, found_b = 0;
        for (int l2 = 0; l2 < 32; ++l2) {
          for (int r = 0; r < 4; ++r)
            for (int h = 0; h < 2; ++h)
              if (a_row(l2, r) == row && a_col(l2, r, h) == k) a_val = fa[l2][r][h], ++found_a;
          for (int r = 0; r < 2; ++r)
            for (int h = 0; h < 2; ++h)
              if (b_k(l2, r, h) == k && b_n(l2) == col) b_val = fb[l2][r][h], ++found_b;
        }
        ASSERT_EQ(found_a, 1);
        ASSERT_EQ(found_b, 1);
        got += a_val * b_val;
      }
      EXPECT_EQ(got, want);
    }
}

}  // namespace
}  // namespace gattn
