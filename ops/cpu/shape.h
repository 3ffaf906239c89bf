// CPU copy kernels behind the shape ops: a block copy along one axis (slice, concat and their
// backwards), the attention's head layout (split_heads), a tiled swap of two axes (transpose), and a
// general strided gather (permute).
// They only move elements, so T is any type of the element's size (the ops pass unsigned integers).
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "ops/cpu/parallel.h"

namespace gattn::cpu {

// Views src as [outer, src_len, inner] and dst as [outer, dst_len, inner], then for every o and
// j < len: dst[o, dst_off + j, :] = src[o, src_off + j, :]. The rest of dst is left untouched.
template <class T>
void copy_axis_block(const T* src, std::int64_t src_len, std::int64_t src_off, T* dst, std::int64_t dst_len,
                     std::int64_t dst_off, std::int64_t outer, std::int64_t len, std::int64_t inner) {
  const std::int64_t chunk = len * inner;  // contiguous on both sides for one o
  if (chunk == 0) return;
  // Split each contiguous chunk into pieces so a single large chunk (outer == 1) still spreads over threads.
  constexpr std::int64_t kPiece = 1 << 14;
  const std::int64_t pieces = (chunk + kPiece - 1) / kPiece;
  const std::int64_t tasks = outer * pieces;
#pragma omp parallel for schedule(static) if (tasks > 1 && worth_parallel(outer * chunk))
  for (std::int64_t t = 0; t < tasks; ++t) {
    const std::int64_t o = t / pieces, p = t % pieces;
    const std::int64_t begin = p * kPiece, end = std::min(chunk, begin + kPiece);
    const T* s = src + (o * src_len + src_off) * inner;
    T* d = dst + (o * dst_len + dst_off) * inner;
    std::copy(s + begin, s + end, d + begin);
  }
}

// The attention's head layout in one pass: x [B, T, P·H·d] holds P pieces (q, k, v) of H heads of d
// on its last axis; heads[p] is piece p as [B, H, T, d]. With `gather` x → heads, else heads → x
// (the backward), where a null heads[p] writes zeros (a piece that got no gradient). One routine for
// both directions, so neither side is const: each call writes only its destination.
template <class T>
void head_layout_copy(T* x, T* const* heads, std::int64_t B, std::int64_t Tn, std::int64_t P, std::int64_t H,
                      std::int64_t d, bool gather) {
  const std::int64_t tasks = B * P * H, row = P * H * d;
#pragma omp parallel for schedule(static) if (tasks > 1 && worth_parallel(tasks * Tn * d))
  for (std::int64_t task = 0; task < tasks; ++task) {
    const std::int64_t h = task % H, p = (task / H) % P, b = task / (H * P);
    T* xs = x + b * Tn * row + (p * H + h) * d;                    // [T, d] with row stride `row`
    T* hs = heads[p] ? heads[p] + (b * H + h) * Tn * d : nullptr;  // [T, d] contiguous
    for (std::int64_t t = 0; t < Tn; ++t) {
      if (gather)
        std::copy(xs + t * row, xs + t * row + d, hs + t * d);
      else if (hs)
        std::copy(hs + t * d, hs + (t + 1) * d, xs + t * row);
      else
        std::fill(xs + t * row, xs + t * row + d, T(0));
    }
  }
}

// out[o, b, m, a, i] = in[o, a, m, b, i] for in [outer, A, mid, B, inner]: two axes swapped.
template <class T>
void swap_axes(const T* in, T* out, std::int64_t outer, std::int64_t A, std::int64_t mid, std::int64_t B,
               std::int64_t inner) {
  const std::int64_t n = outer * A * mid * B * inner;
  if (n == 0) return;
  if (inner >= 16) {
    // Long contiguous runs on both sides: copy them row by row of the output.
    const std::int64_t rows = outer * B * mid;
#pragma omp parallel for schedule(static) if (worth_parallel(n))
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t m = r % mid, b = (r / mid) % B, o = r / (mid * B);
      T* d = out + r * A * inner;
      for (std::int64_t a = 0; a < A; ++a) {
        const T* s = in + (((o * A + a) * mid + m) * B + b) * inner;
        std::copy(s, s + inner, d + a * inner);
      }
    }
    return;
  }
  // Short runs (a plain matrix transpose when inner == 1): work in kTile × kTile tiles so both the
  // reads and the writes stay within a few cache lines.
  constexpr std::int64_t kTile = 32;
  const std::int64_t ta = (A + kTile - 1) / kTile, tb = (B + kTile - 1) / kTile;
  const std::int64_t tasks = outer * mid * ta * tb;
#pragma omp parallel for schedule(static) if (worth_parallel(n))
  for (std::int64_t t = 0; t < tasks; ++t) {
    const std::int64_t jb = t % tb, ja = (t / tb) % ta, m = (t / (tb * ta)) % mid, o = t / (tb * ta * mid);
    const std::int64_t a0 = ja * kTile, a1 = std::min(A, a0 + kTile);
    const std::int64_t b0 = jb * kTile, b1 = std::min(B, b0 + kTile);
    for (std::int64_t b = b0; b < b1; ++b) {
      T* d = out + (((o * B + b) * mid + m) * A) * inner;
      for (std::int64_t a = a0; a < a1; ++a) {
        const T* s = in + (((o * A + a) * mid + m) * B + b) * inner;
        for (std::int64_t i = 0; i < inner; ++i) d[a * inner + i] = s[i];
      }
    }
  }
}

// out (row-major over out_shape) = in[Σ_k idx_k · in_strides[k]]: the general permute, where
// in_strides[k] is the input stride of the input dimension that becomes output dimension k.
template <class T>
void strided_gather(const T* in, T* out, const std::vector<std::int64_t>& out_shape,
                    const std::vector<std::int64_t>& in_strides) {
  const std::size_t nd = out_shape.size();
  std::int64_t n = 1;
  for (std::int64_t s : out_shape) n *= s;
  if (n == 0) return;
  if (nd == 0) {
    out[0] = in[0];
    return;
  }
  const std::int64_t inner = out_shape[nd - 1], step = in_strides[nd - 1];
  const std::int64_t rows = n / inner;
#pragma omp parallel for schedule(static) if (worth_parallel(n))
  for (std::int64_t r = 0; r < rows; ++r) {
    std::int64_t rem = r, base = 0;
    for (std::size_t d = nd - 1; d-- > 0;) {
      base += (rem % out_shape[d]) * in_strides[d];
      rem /= out_shape[d];
    }
    const T* s = in + base;
    T* o = out + r * inner;
    for (std::int64_t i = 0; i < inner; ++i) o[i] = s[i * step];
  }
}

}  // namespace gattn::cpu
