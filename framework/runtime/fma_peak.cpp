// The FMA throughput loop behind "% of peak". Each thread updates 12 independent accumulators
// (acc = acc·a + b): an FMA has 4 cycles of latency and Zen 4 / Intel cores retire 2 per cycle, so
// 8 chains in flight saturate the units and 12 leave margin while still fitting 16 ymm registers.
// The target attributes make the loops independent of -march; the CPU is asked before each runs.
#include "framework/runtime/fma_peak.h"

#include <omp.h>

#include <algorithm>
#include <chrono>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace gattn {

// Where the loops' results go: a global with external linkage, so the loops cannot be optimised away.
float fma_sink = 0;

#if defined(__x86_64__)
namespace {

constexpr int kChains = 12;

// The same loop per ISA, spelled out: a shared template would call the intrinsics from a function
// without the target attribute, which GCC may not inline (a call per FMA) and warns about (psABI).
// a < 1 and b > 0: every chain converges to b / (1 - a) = 1, never to infinities or denormals.
[[gnu::target("avx2,fma")]] float loop_avx2(long iters) {
  __m256 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps(1.0f + 0.01f * static_cast<float>(c));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-6f);
  for (long i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
  }
  for (int c = 1; c < kChains; ++c) acc[0] = _mm256_add_ps(acc[0], acc[c]);  // keeps every chain live
  return _mm_cvtss_f32(_mm256_castps256_ps128(acc[0]));
}

[[gnu::target("avx512f")]] float loop_avx512(long iters) {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(1.0f + 0.01f * static_cast<float>(c));
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-6f);
  for (long i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
  }
  for (int c = 1; c < kChains; ++c) acc[0] = _mm512_add_ps(acc[0], acc[c]);
  return _mm512_cvtss_f32(acc[0]);
}

// FLOP/s of `loop` (width floats per vector) on `threads` threads, best of 3 tries of ~seconds each.
double rate(float (*loop)(long), int width, int threads, double seconds) {
  using clock = std::chrono::steady_clock;
  long iters = 1 << 16;  // grown until one try lasts `seconds`
  double best = 0;
  for (int tries = 0; tries < 3;) {
    const auto t0 = clock::now();
#pragma omp parallel num_threads(threads)
    {
      const float r = loop(iters);
#pragma omp atomic
      fma_sink += r;
    }
    const double dt = std::chrono::duration<double>(clock::now() - t0).count();
    if (dt < seconds) {
      iters *= 2;
      continue;
    }
    best = std::max(best, 2.0 * width * kChains * static_cast<double>(iters) * threads / dt);
    ++tries;
  }
  return best;
}

}  // namespace

FmaPeak measure_fma_peak(int threads, double seconds) {
  FmaPeak p{rate(loop_avx2, 8, threads, seconds) / 1e9, "avx2"};
  if (__builtin_cpu_supports("avx512f")) {
    const double r = rate(loop_avx512, 16, threads, seconds) / 1e9;
    if (r > p.gflops) p = {r, "avx512"};
  }
  return p;
}
#else
FmaPeak measure_fma_peak(int, double) { return {}; }
#endif

}  // namespace gattn
