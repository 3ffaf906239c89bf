// The CPU kernels of ops/adamw.h: AdamW's update and the blocked sum of squares over many tensors,
// each in one parallel region (one fork/join per step instead of one per parameter: a model has
// dozens of parameters, most of them small, and each region costs a wake-up of the pool).
// Included by ops/adamw.cpp alone, which is built with -ffp-contract=off (CMakeLists.txt): every
// operation of the element update (ops/adamw_element.h) rounds once, as on the GPU.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "ops/adamw_element.h"
#include "ops/cpu/parallel.h"

namespace gattn::cpu {

// Elements per block: fixed (not per thread), so what a block computes, and the order in which
// partial sums are added, do not depend on the thread count.
constexpr std::int64_t kOptimizerBlock = 1 << 14;

inline std::int64_t optimizer_blocks(std::int64_t n) { return (n + kOptimizerBlock - 1) / kOptimizerBlock; }

// Calls fn(item, first, end) for every block [first, end) of every item (items[i].n elements).
template <class Item, class Fn>
void for_each_optimizer_block(const std::vector<Item>& items, std::int64_t cost_per_element, Fn fn) {
  std::vector<std::pair<std::size_t, std::int64_t>> blocks;  // (item, first element)
  std::int64_t total = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    for (std::int64_t at = 0; at < items[i].n; at += kOptimizerBlock) blocks.emplace_back(i, at);
    total += items[i].n;
  }
  const std::int64_t count = static_cast<std::int64_t>(blocks.size());
#pragma omp parallel for schedule(dynamic, 1) if (worth_parallel(total * cost_per_element))
  for (std::int64_t k = 0; k < count; ++k) {
    const auto [i, first] = blocks[static_cast<std::size_t>(k)];
    fn(items[i], first, std::min(items[i].n, first + kOptimizerBlock));
  }
}

// One host parameter's update: its buffers and coefficients.
template <class T>
struct AdamWHostParam {
  T* p;
  const T* g;
  T* m;
  T* v;
  std::int64_t n;
  adamw::Coeffs<T> c;
};

template <class T>
void adamw_update_all(const std::vector<AdamWHostParam<T>>& params, const adamw::Hyper<T>& h) {
  for_each_optimizer_block(params, 8, [&h](const AdamWHostParam<T>& u, std::int64_t begin, std::int64_t end) {
    T* __restrict p = u.p;
    const T* __restrict g = u.g;
    T* __restrict m = u.m;
    T* __restrict v = u.v;
    // Local copies of the coefficients: read through the captured references, GCC reloads them
    // every element and does not vectorise the loop (each lane's operations are unchanged).
    const adamw::Hyper<T> hyper = h;
    const adamw::Coeffs<T> coeffs = u.c;
    for (std::int64_t i = begin; i < end; ++i) adamw::update(p[i], g[i], m[i], v[i], hyper, coeffs);
  });
}

// One host tensor's share of a sum of squares: its blocks' sums go to partials[b] for block b.
template <class T>
struct SquaresHostTensor {
  const T* x;
  std::int64_t n;
  double* partials;
};

template <class T>
void block_sums_of_squares(const std::vector<SquaresHostTensor<T>>& tensors) {
  for_each_optimizer_block(tensors, 1, [](const SquaresHostTensor<T>& h, std::int64_t first, std::int64_t end) {
    // A simd reduction: the lanes' order is fixed when this is compiled, so the sum is still
    // deterministic; a plain loop is one chain of dependent adds, ~4× slower.
    double s = 0.0;
    const T* x = h.x;
#pragma omp simd reduction(+ : s)
    for (std::int64_t i = first; i < end; ++i) s += static_cast<double>(x[i]) * static_cast<double>(x[i]);
    h.partials[first / kOptimizerBlock] = s;
  });
}

}  // namespace gattn::cpu
