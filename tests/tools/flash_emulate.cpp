// Runs the fused flash-attention CUDA kernels' own source (ops/cuda/flash_fwd_kernel.cuh,
// flash_bwd_kernels.cuh) on the CPU and compares them with the CPU fused op in f64
// (ops/cpu/flash_attention.h). Each block's 128 threads are CPU threads; __syncthreads, the warp
// shuffles and mma.sync m16n8k16 are emulated with barriers (the mma from the fragment layouts of
// ops/cuda/flash_layout.h, which tests/unit/test_flash_layout.cpp pins to the PTX tables). Shared
// memory starts as NaN bytes, so reading anything not staged shows up. This checks the kernels'
// index math, masking, online softmax, reductions and warp-uniform control flow on a machine
// without a GPU; it says nothing about timing, occupancy or the real hardware's rounding order.
//
// Build by hand from the repository root (needs cuda_runtime.h for the vector types, and BLAS for
// the CPU op), one line:
//   g++ -std=c++20 -O2 -DGATTN_FLASH_EMULATE -I. -isystem /usr/local/cuda/include
//       tests/tools/flash_emulate.cpp -o /tmp/flash_emulate -lpthread -lopenblas
// then run /tmp/flash_emulate (about 1 minute on 2 cores). The build also makes it
// (build/tests/gattn_flash_emulate) and ctest runs `gattn_flash_emulate quick` (label unit). Exit status 0 when every case is
// within the GPU test's tolerances. Deliberate one-line bugs (a window bound off by 8 in dK/dV, a
// sign in the entropy sum) were confirmed to fail it.
#include <cuda_runtime.h>

#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <thread>
#include <vector>

#include "framework/tensor/bf16.h"
#include "ops/cuda/flash_layout.h"

// ---- the emulated CUDA execution model -------------------------------------------------------
thread_local dim3 threadIdx, blockIdx;
dim3 gridDim, blockDim(128);

namespace gattn_emu {
constexpr int kThreads = 128;
std::barrier<>* block_barrier;
std::barrier<>* warp_barrier[4];
alignas(16) unsigned char warp_buf[4][32][64];
std::uint32_t mma_a[4][32][4], mma_b[4][32][2];
alignas(16) unsigned char smem[128 * 1024];

inline uint4* dynamic_smem() { return reinterpret_cast<uint4*>(smem); }
inline void warp_sync() { warp_barrier[threadIdx.x / 32]->arrive_and_wait(); }

inline std::uint32_t pack_bf16x2(float lo, float hi) {
  return static_cast<std::uint32_t>(gattn::float_to_bf16(lo).bits) |
         (static_cast<std::uint32_t>(gattn::float_to_bf16(hi).bits) << 16);
}
inline float bf(std::uint32_t bits16) {
  std::uint32_t u = bits16 << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// d += A·B for the warp: gather every lane's fragments, rebuild A (16×16) and B (16×8), compute
// this lane's four C entries.
inline void mma_bf16(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2]) {
  using namespace gattn::cuda::mma;
  const int w = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int r = 0; r < 4; ++r) mma_a[w][lane][r] = a[r];
  for (int r = 0; r < 2; ++r) mma_b[w][lane][r] = b[r];
  warp_sync();
  float A[16][16], B[16][8];
  for (int l = 0; l < 32; ++l) {
    for (int r = 0; r < 4; ++r)
      for (int h = 0; h < 2; ++h) A[a_row(l, r)][a_col(l, r, h)] = bf((mma_a[w][l][r] >> (16 * h)) & 0xffffu);
    for (int r = 0; r < 2; ++r)
      for (int h = 0; h < 2; ++h) B[b_k(l, r, h)][b_n(l)] = bf((mma_b[w][l][r] >> (16 * h)) & 0xffffu);
  }
  warp_sync();
  for (int v = 0; v < 4; ++v) {
    float s = d[v];
    for (int k = 0; k < 16; ++k) s += A[c_row(lane, v)][k] * B[k][c_col(lane, v)];
    d[v] = s;
  }
}
}  // namespace gattn_emu

inline void __syncthreads() { gattn_emu::block_barrier->arrive_and_wait(); }
template <class T>
T __shfl_xor_sync(unsigned, T x, int off) {
  const int w = threadIdx.x / 32, lane = threadIdx.x % 32;
  std::memcpy(gattn_emu::warp_buf[w][lane], &x, sizeof(T));
  gattn_emu::warp_sync();
  T y;
  std::memcpy(&y, gattn_emu::warp_buf[w][lane ^ off], sizeof(T));
  gattn_emu::warp_sync();
  return y;
}
inline float __uint_as_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

#ifndef __noinline__
#define __noinline__
#endif
#ifndef __launch_bounds__
#define __launch_bounds__(...)
#endif
#include "ops/cuda/flash_bwd_kernels.cuh"
#include "ops/cuda/flash_fwd_kernel.cuh"
#include "ops/cpu/flash_attention.h"

namespace {

// Runs `kernel(args…)` over the grid, one block at a time, 128 CPU threads per block.
template <class... P, class... A>
void launch(void (*kernel)(P...), dim3 grid, A... args) {
  gridDim = grid;
  for (unsigned by = 0; by < grid.y; ++by)
    for (unsigned bx = 0; bx < grid.x; ++bx) {
      std::memset(gattn_emu::smem, 0xff, sizeof(gattn_emu::smem));  // NaN until staged
      std::barrier<> block(gattn_emu::kThreads);
      std::barrier<> w0(32), w1(32), w2(32), w3(32);
      gattn_emu::block_barrier = &block;
      gattn_emu::warp_barrier[0] = &w0;
      gattn_emu::warp_barrier[1] = &w1;
      gattn_emu::warp_barrier[2] = &w2;
      gattn_emu::warp_barrier[3] = &w3;
      std::vector<std::thread> threads;
      for (unsigned t = 0; t < gattn_emu::kThreads; ++t)
        threads.emplace_back([&, t] {
          threadIdx = dim3(t, 0, 0);
          blockIdx = dim3(bx, by, 0);
          kernel(args...);
        });
      for (auto& th : threads) th.join();
    }
}

struct Case {
  const char* name;
  bool key_bias, forget, pair, noise, entropy;
  long long window;
};

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

bool check(const char* what, const std::vector<double>& got, const std::vector<double>& want, double atol, double rel) {
  double worst = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double e = std::abs(got[i] - want[i]);
    if (!(e <= worst)) worst = e, at = i;
  }
  const double bound = atol + rel * max_abs(want);
  const bool ok = worst <= bound;
  if (!ok || std::getenv("FLASH_EMU_VERBOSE"))
    std::printf("    %-14s max|diff| %.3g (bound %.3g) at %zu: got %.6g want %.6g %s\n", what, worst, bound, at,
                got.empty() ? 0.0 : got[at], want.empty() ? 0.0 : want[at], ok ? "" : "FAIL");
  return ok;
}

template <int D>
bool run_case(const Case& c, long long B, long long H, long long T, std::uint64_t seed) {
  using namespace gattn;
  const long long BH = B * H, n = BH * T * D, nr = BH * T;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  auto bf16_vec = [&](long long count) {
    std::vector<std::uint16_t> v(static_cast<std::size_t>(count));
    for (auto& x : v) x = float_to_bf16(u(rng)).bits;
    return v;
  };
  auto to_f64 = [](const std::vector<std::uint16_t>& v) {
    std::vector<double> d(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) d[i] = bf16_to_float(bf16{v[i]});
    return d;
  };
  auto f32_vec = [&](long long count, float lo, float hi) {
    std::uniform_real_distribution<float> r(lo, hi);
    std::vector<float> v(static_cast<std::size_t>(count));
    for (auto& x : v) x = r(rng);
    return v;
  };
  const auto q = bf16_vec(n), k = bf16_vec(n), v = bf16_vec(n), dout = bf16_vec(n);
  const auto kb = f32_vec(nr, -2, 0), fc = f32_vec(nr, -0.5, 0), pr = f32_vec(nr, -2, 2), pc = f32_vec(nr, -2, 2);
  const auto dH = f32_vec(nr, -1, 1);
  const float alpha = 0.6f, inv_tau = c.noise ? 1.0f / 0.7f : 1.0f;

  cuda::FlashParams p;
  p.B = B, p.H = H, p.T = T, p.d = D, p.window = c.window;
  p.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  p.q = q.data(), p.k = k.data(), p.v = v.data();
  if (c.key_bias) p.key_bias = kb.data();
  if (c.forget) p.forget_cum = fc.data();
  if (c.pair) p.pair_row = pr.data(), p.pair_col = pc.data(), p.alpha = alpha, p.inv_tau = inv_tau;
  p.noise = c.noise, p.noise_seed = 1234, p.noise_stream = 7, p.noise_offset = 64;

  const long long n_qb = (T + 63) / 64, n_kb = (T + 63) / 64;
  std::vector<std::uint16_t> out(static_cast<std::size_t>(n));
  std::vector<float> lse(nr), ent(nr), asum(nr), sink(nr);
  std::vector<cuda::FlashGateMoments> mom(static_cast<std::size_t>(BH * n_qb));
  cuda::FlashForwardOutputs o;
  o.out = out.data(), o.lse = lse.data(), o.row_entropy = ent.data(), o.row_asum = asum.data(), o.row_sink = sink.data();
  if (c.pair) o.gate_moments = mom.data();
  launch(cuda::flash::flash_fwd_kernel<D, std::uint16_t>, dim3(static_cast<unsigned>(n_qb), static_cast<unsigned>(BH)), p, o);

  std::vector<std::uint16_t> dq(static_cast<std::size_t>(n)), dk(static_cast<std::size_t>(n)), dv(static_cast<std::size_t>(n));
  std::vector<float> dkb(nr), dfc(nr), dpr(nr), dpc(nr), dal(static_cast<std::size_t>(BH * n_kb)), Drow(nr);
  cuda::FlashBackwardInputs in;
  in.out = out.data(), in.lse = lse.data(), in.d_out = dout.data();
  if (c.entropy) in.d_row_entropy = dH.data(), in.row_entropy = ent.data(), in.row_asum = asum.data();
  cuda::FlashBackwardOutputs g;
  g.dq = dq.data(), g.dk = dk.data(), g.dv = dv.data();
  if (c.key_bias) g.d_key_bias = dkb.data();
  if (c.forget) g.d_forget_cum = dfc.data();
  if (c.pair) g.d_pair_row = dpr.data(), g.d_pair_col = dpc.data(), g.d_alpha_partial = dal.data();
  launch(cuda::flash::flash_bwd_rowdot_kernel<std::uint16_t>, dim3(4), static_cast<const std::uint16_t*>(out.data()),
         static_cast<const std::uint16_t*>(dout.data()), in, Drow.data(), nr, D);
  const float* Dp = Drow.data();
  launch(cuda::flash::flash_bwd_dkdv_kernel<D, std::uint16_t>, dim3(static_cast<unsigned>(n_kb), static_cast<unsigned>(BH)), p,
         in, g, Dp);
  launch(cuda::flash::flash_bwd_dq_kernel<D, std::uint16_t>, dim3(static_cast<unsigned>(n_kb), static_cast<unsigned>(BH)), p,
         in, g, Dp);

  // The CPU op in f64 on the same values.
  const auto q64 = to_f64(q), k64 = to_f64(k), v64 = to_f64(v), dout64 = to_f64(dout);
  const std::vector<double> kb64(kb.begin(), kb.end()), fc64(fc.begin(), fc.end()), pr64(pr.begin(), pr.end()),
      pc64(pc.begin(), pc.end()), dH64(dH.begin(), dH.end());
  cpu::FlashAttentionParams<double> cp;
  cp.B = B, cp.H = H, cp.T_len = T, cp.d = D, cp.window = c.window, cp.scale = 1.0 / std::sqrt(static_cast<double>(D));
  cp.q = q64.data(), cp.k = k64.data(), cp.v = v64.data();
  if (c.key_bias) cp.key_bias = kb64.data();
  if (c.forget) cp.forget_cum = fc64.data();
  if (c.pair) cp.pair_row = pr64.data(), cp.pair_col = pc64.data(), cp.alpha = alpha, cp.inv_tau = inv_tau;
  cp.noise = c.noise, cp.noise_seed = 1234, cp.noise_stream = 7, cp.noise_offset = 64;
  std::vector<double> out64(n), lse64(nr), ent64(nr), asum64(nr), sink64(nr);
  std::vector<ops::GateMoments> mom64(static_cast<std::size_t>(BH * ((T + 63) / 64)));
  cpu::FlashForwardOutputs<double> co;
  co.out = out64.data(), co.lse = lse64.data(), co.row_entropy = ent64.data(), co.row_asum = asum64.data(),
  co.row_sink = sink64.data();
  if (c.pair) co.gate_moments = mom64.data();
  cpu::flash_attention_forward(cp, co);
  std::vector<double> dq64(n), dk64(n), dv64(n), dkb64(nr), dfc64(nr), dpr64(nr), dpc64(nr), dal64(BH);
  cpu::FlashBackwardInputs<double> ci;
  ci.out = out64.data(), ci.lse = lse64.data(), ci.d_out = dout64.data();
  if (c.entropy) ci.d_row_entropy = dH64.data(), ci.row_entropy = ent64.data(), ci.row_asum = asum64.data();
  cpu::FlashBackwardOutputs<double> cg;
  cg.dq = dq64.data(), cg.dk = dk64.data(), cg.dv = dv64.data(), cg.d_key_bias = dkb64.data(), cg.d_forget_cum = dfc64.data(),
  cg.d_pair_row = dpr64.data(), cg.d_pair_col = dpc64.data(), cg.d_alpha_partial = dal64.data();
  cpu::flash_attention_backward(cp, ci, cg);

  // The GPU test's bounds (tests/gpu/test_cuda_flash_attention.cpp), T = 1 included.
  const double grad_atol = T == 1 ? std::ldexp(static_cast<double>(D), -9) : 1e-4;
  auto f = [](const auto& x) { return std::vector<double>(x.begin(), x.end()); };
  auto b = [&](const std::vector<std::uint16_t>& x) { return to_f64(x); };
  bool ok = true;
  ok &= check("out", b(out), out64, std::ldexp(1.0, -7), 0);
  ok &= check("lse", f(lse), lse64, 1e-4, 1e-5);
  ok &= check("row_entropy", f(ent), ent64, 1e-4, 1e-4);
  std::vector<double> sink_want(nr);  // the CUDA kernel's convention: 0 for i = 0 and hidden key 0
  for (long long bh = 0; bh < BH; ++bh)
    for (long long i = 1; i < T; ++i)
      sink_want[bh * T + i] = (c.window == 0 || i < c.window) ? sink64[bh * T + i] : 0.0;
  ok &= check("row_sink", f(sink), sink_want, 1e-5, 1e-4);
  if (c.pair) {
    double gs = 0, ws = 0, gc = 0, wc = 0;
    for (auto& m : mom) gs += m.sum, gc += static_cast<double>(m.count);
    for (auto& m : mom64) ws += m.sum, wc += static_cast<double>(m.count);
    ok &= check("gate_sum", {gs}, {ws}, 1e-5, 1e-4);
    ok &= check("gate_count", {gc}, {wc}, 0, 0);
    double ga = 0, wa = 0;
    for (float x : dal) ga += x;
    for (double x : dal64) wa += x;
    ok &= check("d_alpha", {ga}, {wa}, grad_atol, std::ldexp(1.0, -5));
    ok &= check("d_pair_row", f(dpr), dpr64, grad_atol, std::ldexp(1.0, -5));
    ok &= check("d_pair_col", f(dpc), dpc64, grad_atol, std::ldexp(1.0, -5));
  }
  ok &= check("dq", b(dq), dq64, grad_atol, std::ldexp(1.0, -5));
  ok &= check("dk", b(dk), dk64, grad_atol, std::ldexp(1.0, -5));
  ok &= check("dv", b(dv), dv64, grad_atol, std::ldexp(1.0, -5));
  if (c.key_bias) ok &= check("d_key_bias", f(dkb), dkb64, grad_atol, std::ldexp(1.0, -5));
  if (c.forget) ok &= check("d_forget_cum", f(dfc), dfc64, grad_atol, std::ldexp(1.0, -5));
  return ok;
}

// f32 inputs (autocast) take the Io<float> staging: with bf16-exact values the forward output must
// round to exactly the bf16 run's output, and lse must be identical.
template <int D>
bool f32_inputs_match(long long T) {
  using namespace gattn;
  const long long BH = 2, n = BH * T * D, nr = BH * T;
  std::mt19937_64 rng(99);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<std::uint16_t> qb(n), kb(n), vb(n);
  std::vector<float> qf(n), kf(n), vf(n);
  for (long long i = 0; i < n; ++i) {
    qb[i] = float_to_bf16(u(rng)).bits, kb[i] = float_to_bf16(u(rng)).bits, vb[i] = float_to_bf16(u(rng)).bits;
    qf[i] = bf16_to_float(bf16{qb[i]}), kf[i] = bf16_to_float(bf16{kb[i]}), vf[i] = bf16_to_float(bf16{vb[i]});
  }
  cuda::FlashParams p;
  p.B = 1, p.H = BH, p.T = T, p.d = D, p.window = 0, p.scale = static_cast<float>(1.0 / std::sqrt(double(D)));
  std::vector<std::uint16_t> ob(n);
  std::vector<float> of(n), lb(nr), lf(nr);
  cuda::FlashForwardOutputs o;
  const dim3 grid(static_cast<unsigned>((T + 63) / 64), static_cast<unsigned>(BH));
  p.q = qb.data(), p.k = kb.data(), p.v = vb.data(), o.out = ob.data(), o.lse = lb.data();
  launch(cuda::flash::flash_fwd_kernel<D, std::uint16_t>, grid, p, o);
  p.q = qf.data(), p.k = kf.data(), p.v = vf.data(), o.out = of.data(), o.lse = lf.data();
  launch(cuda::flash::flash_fwd_kernel<D, float>, grid, p, o);
  for (long long i = 0; i < n; ++i)
    if (float_to_bf16(of[i]).bits != ob[i]) {
      std::printf("    f32 inputs: out[%lld] = %g rounds differently from the bf16 run's %g\n", i, of[i],
                  bf16_to_float(bf16{ob[i]}));
      return false;
    }
  for (long long i = 0; i < nr; ++i)
    if (lf[i] != lb[i]) {
      std::printf("    f32 inputs: lse[%lld] %g vs %g\n", i, lf[i], lb[i]);
      return false;
    }
  return true;
}

}  // namespace

// `flash_emulate quick` (what ctest runs): T = 37 for every head dim and T = 130 for d = 64 only,
// about a third of the full grid's time.
int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "quick") == 0;
  const Case cases[] = {
      {"none", false, false, false, false, false, 0},          {"score", true, false, false, false, false, 0},
      {"forget", false, true, false, false, false, 0},         {"pair", false, false, true, false, false, 0},
      {"pair_noise", false, false, true, true, false, 0},      {"window5", false, false, false, false, false, 5},
      {"all_window70_entropy", true, true, true, false, true, 70}, {"entropy", false, false, false, false, true, 0},
  };
  bool all = true;
  std::uint64_t seed = 1;
  for (long long T : {1LL, 37LL, 130LL})
    for (const Case& c : cases) {
      if (quick && T == 1) continue;
      const bool all_dims = !quick || T == 37;
      const bool ok16 = all_dims ? run_case<16>(c, 1, 2, T, seed++) : true;  // "ok" when not run
      const bool ok32 = T == 37 ? run_case<32>(c, 1, 2, T, seed++) : true;
      const bool ok64 = run_case<64>(c, 2, 1, T, seed++);
      const bool ok128 = T <= 37 ? run_case<128>(c, 1, 1, T, seed++) : true;
      std::printf("%-22s T=%-4lld d16 %s  d32 %s  d64 %s  d128 %s\n", c.name, T, ok16 ? "ok" : "FAIL", ok32 ? "ok" : "FAIL",
                  ok64 ? "ok" : "FAIL", ok128 ? "ok" : "FAIL");
      std::fflush(stdout);
      all &= ok16 && ok32 && ok64 && ok128;
    }
  const bool f32_ok = f32_inputs_match<64>(130) && f32_inputs_match<16>(37);
  std::printf("f32 inputs (autocast staging) %s\n", f32_ok ? "ok" : "FAIL");
  all &= f32_ok;
  std::printf(all ? "all cases within tolerance\n" : "FAILURES\n");
  return all ? 0 : 1;
}
