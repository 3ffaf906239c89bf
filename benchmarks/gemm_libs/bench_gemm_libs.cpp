// GEMM libraries compared on the exact f32 GEMMs of gattn's reference CPU model
// (configs/shakespeare_char/output.yaml: batch 12 × block 64 = 768 rows, C = 128, 4 layers,
// vocabulary 65, output gate), to pick the library gattn should use for small shapes. The program
// is built once per library, each time linked with one backend_<lib>.cpp (backend.h says why):
//
//   ./build/benchmarks/gattn_bench_gemm_openblas [--rows 3072] [--threads 1,2] [--min-time 0.2]
//
// For each thread count it prints a markdown table, one row per product of each linear layer
// (forward y = x·Wᵀ, dx = g·W, dW = gᵀ·x): median time per call after warm-up, GFLOP/s and % of the
// FMA peak measured here (framework/runtime/fma_peak.cpp), then the training step's total. Every product is checked
// once per thread count against a double-precision reference; a wrong result exits 1. A compact table after the "<!--
// summary -->" line is what benchmarks/scripts/gemm_libs.sh merges across libraries.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend.h"
#include "framework/runtime/fma_peak.h"

namespace {

using namespace gemm_bench;

constexpr int kLayers = 4;

// A linear layer y = x·Wᵀ, W stored [out, in]; per_step: how often it runs in one training step.
struct Linear {
  const char* name;
  const char* tag;  // short column label of the summary table
  int in, out, per_step;
};
const Linear kLinears[] = {
    {"attn.qkv", "qkv", 128, 384, kLayers},
    {"attn.gate", "gate", 128, 128, kLayers},  // the output gate's σ(h·Wᵀ + b)
    {"attn.proj", "proj", 128, 128, kLayers},
    {"mlp.fc", "fc", 128, 512, kLayers},
    {"mlp.proj", "mproj", 512, 128, kLayers},
    {"head (tied wte)", "head", 128, 65, 1},
    // A candidate fusion of qkv and gate (one GEMM, same input): shown, not counted in the step.
    {"qkv+gate fused", "qkvg", 128, 512, 0},
};

// One product C[M,N] = op(A)·op(B), all row-major and dense.
struct Gemm {
  const Linear* layer;
  const char* op;  // "fwd", "dx", "dW"
  bool ta, tb;
  int M, N, K;
  int lda() const { return ta ? M : K; }
  int ldb() const { return tb ? K : N; }
  double flops() const { return 2.0 * M * N * K; }
};

std::vector<Gemm> model_gemms(int rows) {
  std::vector<Gemm> out;
  for (const Linear& l : kLinears) {
    out.push_back({&l, "fwd", false, true, rows, l.out, l.in});  // y = x·Wᵀ
    out.push_back({&l, "dx", false, false, rows, l.in, l.out});  // dx = g·W
    out.push_back({&l, "dW", true, false, l.out, l.in, rows});   // dW = gᵀ·x
  }
  return out;
}

// 64-byte aligned floats: what a tensor allocator hands out, so no library pays for misalignment.
struct Buffer {
  struct Free {
    void operator()(float* f) const { std::free(f); }
  };
  std::unique_ptr<float, Free> p;
  explicit Buffer(std::size_t n) : p(static_cast<float*>(std::aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64))) {
    if (!p) throw std::bad_alloc();
  }
  float* get() const { return p.get(); }
};

// op(X) as a dense row-major [rows, cols] matrix (X row-major with leading dimension ld).
std::vector<float> dense_op(const float* X, bool t, int rows, int cols, int ld) {
  std::vector<float> d(static_cast<std::size_t>(rows) * cols);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j)
      d[static_cast<std::size_t>(i) * cols + j] =
          t ? X[static_cast<std::size_t>(j) * ld + i] : X[static_cast<std::size_t>(i) * ld + j];
  return d;
}

// The exact product (double) and, per element, Σ_k |a_ik·b_kj|: the scale f32 rounding error is
// measured against. Any summation order keeps |C − exact| ≤ K·u·Σ|a·b| (u = 2⁻²⁴), so that bound
// passes every correct library and still fails a layout mistake, which is off by O(1).
struct Reference {
  std::vector<double> c, scale;
};
Reference reference(const Gemm& g, const float* A, const float* B) {
  const std::vector<float> a = dense_op(A, g.ta, g.M, g.K, g.lda()), b = dense_op(B, g.tb, g.K, g.N, g.ldb());
  Reference r{std::vector<double>(static_cast<std::size_t>(g.M) * g.N),
              std::vector<double>(static_cast<std::size_t>(g.M) * g.N)};
  for (int i = 0; i < g.M; ++i) {
    double* c = &r.c[static_cast<std::size_t>(i) * g.N];
    double* s = &r.scale[static_cast<std::size_t>(i) * g.N];
    for (int p = 0; p < g.K; ++p) {
      const double av = a[static_cast<std::size_t>(i) * g.K + p];
      const float* brow = &b[static_cast<std::size_t>(p) * g.N];
      for (int j = 0; j < g.N; ++j) {
        c[j] += av * brow[j];
        s[j] += std::abs(av * brow[j]);
      }
    }
  }
  return r;
}

// max_ij |C − exact| / Σ_k|a·b|; NaN (an element never written: C starts as NaN) counts as infinite.
double relative_error(const float* C, const Reference& r) {
  double worst = 0;
  for (std::size_t i = 0; i < r.c.size(); ++i) {
    const double e = std::abs(C[i] - r.c[i]) / std::max(r.scale[i], std::numeric_limits<double>::min());
    worst = std::isnan(e) ? std::numeric_limits<double>::infinity() : std::max(worst, e);
  }
  return worst;
}

void call(const Gemm& g, const float* A, const float* B, float* C) {
  backend_sgemm(g.ta, g.tb, g.M, g.N, g.K, A, g.lda(), B, g.ldb(), C, g.N);
}

// Median seconds per call: warm up (≥ 3 calls and 20 ms, so thread pools and JIT caches are hot),
// then time single calls until they add up to min_time (and at least 5).
double median_time(const Gemm& g, const float* A, const float* B, float* C, double min_time) {
  using clock = std::chrono::steady_clock;
  const auto w0 = clock::now();
  for (int i = 0; i < 3 || clock::now() - w0 < std::chrono::milliseconds(20); ++i) call(g, A, B, C);
  std::vector<double> samples;
  for (double total = 0; total < min_time || samples.size() < 5;) {
    const auto t0 = clock::now();
    call(g, A, B, C);
    samples.push_back(std::chrono::duration<double>(clock::now() - t0).count());
    total += samples.back();
  }
  std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
  return samples[samples.size() / 2];
}

struct Result {
  double seconds = 0, error = 0;
  std::string path;
};

struct Options {
  int rows = 768;
  std::vector<int> threads = {1, 2};
  double min_time = 0.2;
};

Options parse(int argc, char** argv) {
  Options o;
  auto usage = [&](const std::string& why) {
    std::fprintf(
        stderr,
        "%s\nusage: %s [--rows N (768 = batch 12 × block 64; 3072 for T = 256)] [--threads 1,2] [--min-time SECONDS]\n",
        why.c_str(), argv[0]);
    std::exit(2);
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") usage("GEMM libraries on gattn's reference CPU model shapes");
    if (i + 1 >= argc) usage("missing value after " + a);
    const std::string v = argv[++i];
    try {
      if (a == "--rows") {
        o.rows = std::stoi(v);
      } else if (a == "--min-time") {
        o.min_time = std::stod(v);
      } else if (a == "--threads") {
        o.threads.clear();
        for (std::size_t p = 0; p < v.size();) {
          std::size_t e = v.find(',', p);
          if (e == std::string::npos) e = v.size();
          o.threads.push_back(std::stoi(v.substr(p, e - p)));
          p = e + 1;
        }
      } else {
        usage("unknown option " + a);
      }
    } catch (const std::logic_error&) {
      usage("bad value for " + a + ": " + v);
    }
  }
  if (o.rows <= 0 || o.threads.empty() || o.min_time < 0) usage("rows and threads must be positive");
  for (int t : o.threads)
    if (t <= 0) usage("threads must be positive");
  return o;
}

// One training step's GEMM time and FLOPs: each linear's products × how often it runs per step.
struct Step {
  double seconds = 0, flops = 0;
  double gflops() const { return flops / seconds / 1e9; }
};
Step step_total(const std::vector<Gemm>& gemms, const std::vector<Result>& results) {
  Step st;
  for (std::size_t s = 0; s < gemms.size(); ++s) {
    st.seconds += gemms[s].layer->per_step * results[s].seconds;
    st.flops += gemms[s].layer->per_step * gemms[s].flops();
  }
  return st;
}

const char* product_name(const Gemm& g) { return g.ta ? "Aᵀ·B" : g.tb ? "A·Bᵀ" : "A·B"; }

// Measures, checks and prints; main turns exceptions into a FAILED line.
int run(const Options& opt) {
  const std::vector<Gemm> gemms = model_gemms(opt.rows);
  const std::string version = backend_version();
  const std::size_t nt = opt.threads.size();

  // The peak is measured before and after the GEMMs and the better one kept: on a shared machine
  // other work can only make a measurement lower.
  std::vector<gattn::FmaPeak> peaks;
  for (int t : opt.threads) peaks.push_back(gattn::measure_fma_peak(t));

  // Shapes outside, thread counts inside: each shape's reference is computed once.
  std::vector<std::vector<Result>> results(nt, std::vector<Result>(gemms.size()));
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (std::size_t s = 0; s < gemms.size(); ++s) {
    const Gemm& g = gemms[s];
    const std::size_t na = static_cast<std::size_t>(g.M) * g.K, nb = static_cast<std::size_t>(g.K) * g.N,
                      nc = static_cast<std::size_t>(g.M) * g.N;
    Buffer A(na), B(nb), C(nc);
    for (std::size_t i = 0; i < na; ++i) A.get()[i] = dist(rng);
    for (std::size_t i = 0; i < nb; ++i) B.get()[i] = dist(rng);
    const Reference ref = reference(g, A.get(), B.get());
    const double tolerance = g.K * std::ldexp(1.0, -24);
    for (std::size_t t = 0; t < nt; ++t) {
      backend_set_threads(opt.threads[t]);
      std::fill(C.get(), C.get() + nc, std::numeric_limits<float>::quiet_NaN());  // beta = 0 must overwrite
      call(g, A.get(), B.get(), C.get());
      Result& r = results[t][s];
      r.error = relative_error(C.get(), ref);
      r.path = backend_path();
      if (!(r.error <= tolerance)) {
        std::fprintf(stderr, "FAILED: %s %s %s (%d×%d×%d, %s) on %d threads: max relative error %.3g > %.3g\n",
                     backend_name(), g.layer->name, g.op, g.M, g.N, g.K, product_name(g), opt.threads[t], r.error,
                     tolerance);
        return 1;
      }
      r.seconds = median_time(g, A.get(), B.get(), C.get(), opt.min_time);
    }
  }

  for (std::size_t t = 0; t < nt; ++t) {
    const gattn::FmaPeak again = gattn::measure_fma_peak(opt.threads[t]);
    if (again.gflops > peaks[t].gflops) peaks[t] = again;
  }

  std::printf("# %s: f32 GEMMs of gattn's reference CPU model\n\n", backend_name());
  std::printf(
      "%s. Rows R = %d (the config's batch 12 × block 64 = 768; --rows 3072 is T = 256), C = 128, %d layers, "
      "vocab 65. Median per call after warm-up, each repeated ≥ %.2g s; alpha = 1, beta = 0; operands "
      "hot in cache. Peak: a measured FMA loop (the better of one run before and one after the GEMMs), not a "
      "datasheet figure. max rel err: max |C − exact| / Σ_k |a·b| (tolerance K·2⁻²⁴).\n",
      version.c_str(), opt.rows, kLayers, opt.min_time);
  for (std::size_t t = 0; t < nt; ++t) {
    const double peak = peaks[t].gflops;
    std::printf("\n## %s, %d thread%s (peak %.1f GFLOP/s, %s FMA loop)\n\n", backend_name(), opt.threads[t],
                opt.threads[t] == 1 ? "" : "s", peak, peaks[t].isa.c_str());
    std::printf("| layer | product | M×N×K | op | µs/call | GFLOP/s | %% peak | max rel err | path |\n");
    std::printf("|---|---|---|---|--:|--:|--:|--:|---|\n");
    for (std::size_t s = 0; s < gemms.size(); ++s) {
      const Gemm& g = gemms[s];
      const Result& r = results[t][s];
      const double gf = g.flops() / r.seconds / 1e9;
      std::printf("| %s | %s | %d×%d×%d | %s | %.1f | %.1f | %.0f%% | %.1e | %s |\n", g.layer->name, g.op, g.M, g.N,
                  g.K, product_name(g), r.seconds * 1e6, gf, 100 * gf / peak, r.error,
                  r.path.empty() ? "-" : r.path.c_str());
    }
    const Step st = step_total(gemms, results[t]);
    std::printf(
        "\nStep total (%d layers × qkv, gate, proj, fc, mproj × fwd, dx, dW + head once; not the fused row): "
        "%.3f ms, %.1f GFLOP/s, %.0f%% of peak\n",
        kLayers, st.seconds * 1e3, st.gflops(), 100 * st.gflops() / peak);
  }

  // The compact table: one row per thread count, GFLOP/s per product (tag.fwd / .dx / .dW).
  std::printf("\n<!-- summary -->\n| library | version | rows | threads | peak GFLOP/s |");
  for (const Gemm& g : gemms) std::printf(" %s.%s |", g.layer->tag, g.op);
  std::printf(" step ms | step GFLOP/s | %% peak | notes |\n|---|---|--:|--:|--:|");
  for (std::size_t s = 0; s < gemms.size(); ++s) std::printf("--:|");
  std::printf("--:|--:|--:|---|\n");
  for (std::size_t t = 0; t < nt; ++t) {
    std::printf("| %s | %s | %d | %d | %.1f |", backend_name(), version.c_str(), opt.rows, opt.threads[t],
                peaks[t].gflops);
    std::map<std::string, int> paths;  // non-default paths (LIBXSMM's transpose copies) and how often
    for (std::size_t s = 0; s < gemms.size(); ++s) {
      const Gemm& g = gemms[s];
      const Result& r = results[t][s];
      std::printf(" %.1f |", g.flops() / r.seconds / 1e9);
      if (!r.path.empty() && r.path != "JIT") ++paths[r.path];
    }
    std::string notes;
    for (const auto& [path, n] : paths)
      notes += (notes.empty() ? "" : "; ") + path + " (" + std::to_string(n) + " products)";
    const Step st = step_total(gemms, results[t]);
    std::printf(" %.3f | %.1f | %.0f%% | %s |\n", st.seconds * 1e3, st.gflops(), 100 * st.gflops() / peaks[t].gflops,
                notes.empty() ? "-" : notes.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {  // a library's error status (dnnl, libxsmm dispatch)
    std::fprintf(stderr, "FAILED: %s: %s\n", backend_name(), e.what());
    return 1;
  }
}
