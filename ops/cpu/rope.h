// CPU kernel of the rotary position embedding (ops/rope.h has the math): the rotation of each
// (x[k], x[k+rd/2]) pair of the first rd (rotary_dim) elements of every row by the angle
// p_t·base^(−2k/rd), or by its negative (the backward); elements rd … d−1 pass through.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "ops/cpu/parallel.h"

namespace gattn::cpu {

// θ_k = base^(−2k/rd) for pair k of the rd rotated elements of a head (rd = d unless the rotation
// is partial); the CUDA kernel computes it by the same formula.
inline double rope_frequency(std::int64_t k, std::int64_t rd, double base) {
  return std::pow(base, -2.0 * static_cast<double>(k) / static_cast<double>(rd));
}

// y = x with the first rd elements of every row t of each of the `outer` [T, d] blocks rotated by
// the angles p_t·θ_k, θ_k = base^(−2k/rd) (inverse: −p_t·θ_k), and the other d − rd copied. Angles,
// cos, sin and the products are in double; x == y is fine. rd is even, 0 < rd ≤ d.
template <class T>
void rope_rows(const T* x, T* y, const std::int32_t* positions, std::int64_t outer, std::int64_t rows, std::int64_t d,
               std::int64_t rd, double base, bool inverse) {
  const std::int64_t h = rd / 2;
  if (outer == 0 || rows == 0 || h == 0) return;
  // cos and sin of every (row, pair) once, shared by the outer blocks (the batch and the heads).
  std::vector<double> cs(static_cast<std::size_t>(rows * h)), sn(cs.size());
  const double sign = inverse ? -1.0 : 1.0;
#pragma omp parallel for schedule(static) if (worth_parallel(rows * h * 32))
  for (std::int64_t t = 0; t < rows; ++t)
    for (std::int64_t k = 0; k < h; ++k) {
      const double a = static_cast<double>(positions[t]) * rope_frequency(k, rd, base);
      cs[static_cast<std::size_t>(t * h + k)] = std::cos(a);
      sn[static_cast<std::size_t>(t * h + k)] = sign * std::sin(a);
    }
#pragma omp parallel for schedule(static) if (worth_parallel(outer * rows * d))
  for (std::int64_t r = 0; r < outer * rows; ++r) {
    const std::int64_t t = r % rows;
    const T* xr = x + r * d;
    T* yr = y + r * d;
    const double* c = cs.data() + t * h;
    const double* s = sn.data() + t * h;
    for (std::int64_t k = 0; k < h; ++k) {
      const double x0 = static_cast<double>(xr[k]), x1 = static_cast<double>(xr[k + h]);
      yr[k] = static_cast<T>(x0 * c[k] - x1 * s[k]);
      yr[k + h] = static_cast<T>(x1 * c[k] + x0 * s[k]);
    }
    if (x != y)
      for (std::int64_t j = rd; j < d; ++j) yr[j] = xr[j];
  }
}

}  // namespace gattn::cpu
