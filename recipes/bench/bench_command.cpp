// `gattn bench attention` (and `gattn bench generate`, recipes/bench/generate_bench.cpp): times ops::flash_attention
// per gate kind over a grid of shapes and prints a table or, with --json, one JSON object per case
// (benchmarks/scripts/attention_torch.py reads those to compare against PyTorch on the same shapes). Shapes hold
// batch×T at
// --tokens, as a training step of a fixed token budget would.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/cuda/device.h"
#include "framework/runtime/memory_budget.h"
#include "recipes/ablate/ablation.h"
#include "recipes/bench/attention_bench.h"
#include "recipes/bench/generate_bench.h"
#include "recipes/common/option_list.h"
#include "recipes/common/recipe.h"

namespace gattn::recipes {

namespace {

struct BenchAttentionArgs {
  std::string device;  // empty: cuda when available, else cpu
  std::string dtype;   // empty: bf16 on cuda, f32 on cpu
  std::string kinds;   // empty: every kind bench_kinds() lists
  std::string T = "1024,4096,16384";
  std::string heads_dim = "16x64,8x128";
  std::string kv_heads;  // empty: as many as query heads
  std::int64_t tokens = 16384;
  int warmup = 2;
  int iters = 5;
  std::uint64_t seed = 0;
  bool json = false;
};

// A positive integer, the whole string (std::stoll would accept "12abc").
std::int64_t positive_int(const std::string& text, const std::string& option) {
  std::size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || v <= 0)
    throw UsageError(option + ": expected a positive integer, got '" + text + "'");
  return v;
}

struct HeadShape {
  std::int64_t H, d;
};

std::vector<HeadShape> parse_heads_dim(const std::string& text) {
  std::vector<HeadShape> out;
  for (const std::string& item : split_list(text, "--heads-dim")) {
    const std::size_t x = item.find('x');
    if (x == std::string::npos) throw UsageError("--heads-dim: expected HxD like 16x64, got '" + item + "'");
    out.push_back({positive_int(item.substr(0, x), "--heads-dim"), positive_int(item.substr(x + 1), "--heads-dim")});
  }
  return out;
}

AttentionBenchSettings settings_from(const BenchAttentionArgs& a) {
  AttentionBenchSettings s;
  const std::string device = !a.device.empty() ? a.device : cuda::available() ? "cuda" : "cpu";
  if (device == "cpu") {
    s.device = Device::cpu;
  } else if (device == "cuda") {
    if (!cuda::available()) throw UsageError("--device cuda: this machine or build has no usable CUDA device");
    s.device = Device::cuda;
  } else {
    throw UsageError("--device: expected cpu or cuda, got '" + device + "'");
  }
  const std::string dtype = !a.dtype.empty() ? a.dtype : s.device == Device::cuda ? "bf16" : "f32";
  if (dtype == "f32") {
    s.dtype = DType::f32;
  } else if (dtype == "f64") {
    s.dtype = DType::f64;
  } else if (dtype == "bf16") {
    if (s.device == Device::cpu) throw UsageError("--dtype bf16: the CPU attention computes in f32 or f64 only");
    s.dtype = DType::bf16;
  } else {
    throw UsageError("--dtype: expected bf16, f32 or f64, got '" + dtype + "'");
  }
  if (a.warmup < 0) throw UsageError("--warmup: expected 0 or more, got " + std::to_string(a.warmup));
  if (a.iters < 1) throw UsageError("--iters: expected 1 or more, got " + std::to_string(a.iters));
  s.warmup = a.warmup;
  s.iters = a.iters;
  s.seed = a.seed;
  return s;
}

// A shape whose inputs alone cannot fit in host memory is refused before anything is allocated,
// naming the options that make it. Counted: q, k, v, the output gradient and their gradients (8
// tensors of B·H·T·d) on the CPU; on CUDA the f32 host tensors they are drawn into (2 at a time).
void check_case_memory(const AttentionBenchCase& c, const BenchAttentionArgs& a, const AttentionBenchSettings& s) {
  const double elements =
      static_cast<double>(c.B) * static_cast<double>(c.H) * static_cast<double>(c.T) * static_cast<double>(c.d);
  const double bytes =
      s.device == Device::cpu ? 8.0 * elements * static_cast<double>(dtype_size(s.dtype)) : 2.0 * elements * 4.0;
  const std::string shortfall = memory_shortfall(bytes, "the attention inputs and their gradients");
  if (shortfall.empty()) return;
  throw UsageError("--T " + std::to_string(c.T) + " with --heads-dim " + std::to_string(c.H) + "x" +
                   std::to_string(c.d) + " and --tokens " + std::to_string(a.tokens) +
                   ": the case B=" + std::to_string(c.B) + " " + shortfall);
}

std::vector<AttentionBenchCase> cases_from(const BenchAttentionArgs& a, const AttentionBenchSettings& s) {
  std::vector<std::string> kinds = a.kinds.empty() ? bench_kinds() : split_list(a.kinds, "--kinds");
  std::string known;
  for (const std::string& k : bench_kinds()) known += (known.empty() ? "" : ", ") + k;
  for (const std::string& k : kinds)
    if (!is_bench_kind(k)) throw UsageError("--kinds: unknown kind '" + k + "' (" + known + ")");
  std::vector<std::int64_t> Ts;
  for (const std::string& t : split_list(a.T, "--T")) Ts.push_back(positive_int(t, "--T"));
  const std::vector<HeadShape> heads = parse_heads_dim(a.heads_dim);
  // Key/value head counts (grouped-query attention); 0 stands for "as many as the query heads".
  std::vector<std::int64_t> kv_heads{0};
  if (!a.kv_heads.empty()) {
    kv_heads.clear();
    for (const std::string& n : split_list(a.kv_heads, "--kv-heads")) kv_heads.push_back(positive_int(n, "--kv-heads"));
  }
  for (const HeadShape& hd : heads)
    for (std::int64_t kv : kv_heads)
      if (kv > 0 && hd.H % kv != 0)
        throw UsageError("--kv-heads " + std::to_string(kv) + ": must divide the head count " + std::to_string(hd.H) +
                         " of --heads-dim " + std::to_string(hd.H) + "x" + std::to_string(hd.d));
  if (a.tokens < 1) throw UsageError("--tokens: expected a positive integer, got " + std::to_string(a.tokens));
  std::vector<AttentionBenchCase> cases;
  for (const HeadShape& hd : heads)
    for (std::int64_t T : Ts) {
      const AttentionBenchCase shape{"", std::max<std::int64_t>(1, a.tokens / T), T, hd.H, hd.d};
      check_case_memory(shape, a, s);
      for (std::int64_t kv : kv_heads)
        for (const std::string& k : kinds) cases.push_back({k, shape.B, shape.T, shape.H, shape.d, kv});
    }
  return cases;
}

nlohmann::json to_json(const AttentionBenchResult& r, const AttentionBenchSettings& s) {
  nlohmann::json j = {{"kind", r.shape.kind},
                      {"B", r.shape.B},
                      {"T", r.shape.T},
                      {"H", r.shape.H},
                      {"H_kv", r.shape.kv()},
                      {"d", r.shape.d},
                      {"dtype", dtype_name(s.dtype)},
                      {"precision", r.precision},
                      {"device", device_name(s.device)},
                      {"status", r.status}};
  if (r.status == "ok") {
    j["fwd_ms"] = r.fwd_ms;
    j["bwd_ms"] = r.bwd_ms;
    j["fwd_tflops"] = r.fwd_tflops;
    j["fwd_bwd_tflops"] = r.fwd_bwd_tflops;
  }
  j["peak_mem_bytes"] = r.peak_bytes >= 0 ? nlohmann::json(r.peak_bytes) : nlohmann::json(nullptr);
  return j;
}

void print_header(const AttentionBenchSettings& s) {
  std::printf("gattn bench attention on %s, %s; medians of %d iterations after %d warm-up\n", device_name(s.device),
              dtype_name(s.dtype), s.iters, s.warmup);
  std::printf("%-7s %4s %6s %5s %4s  %10s %10s %9s %12s %9s  %s\n", "kind", "B", "T", "HxD", "KV", "fwd ms", "bwd ms",
              "fwd TF/s", "fwd+bwd TF/s", "peak MiB", "status");
}

void print_row(const AttentionBenchResult& r) {
  const std::string hd = std::to_string(r.shape.H) + "x" + std::to_string(r.shape.d);
  const std::string peak = r.peak_bytes >= 0 ? std::to_string(r.peak_bytes >> 20) : "-";
  const long long kv = r.shape.kv();
  if (r.status == "ok")
    std::printf("%-7s %4lld %6lld %5s %4lld  %10.3f %10.3f %9.4g %12.4g %9s  ok (%s)\n", r.shape.kind.c_str(),
                static_cast<long long>(r.shape.B), static_cast<long long>(r.shape.T), hd.c_str(), kv, r.fwd_ms,
                r.bwd_ms, r.fwd_tflops, r.fwd_bwd_tflops, peak.c_str(), r.precision.c_str());
  else
    std::printf("%-7s %4lld %6lld %5s %4lld  %10s %10s %9s %12s %9s  %s\n", r.shape.kind.c_str(),
                static_cast<long long>(r.shape.B), static_cast<long long>(r.shape.T), hd.c_str(), kv, "-", "-", "-",
                "-", peak.c_str(), r.status.c_str());
}

int run_bench_attention(const BenchAttentionArgs& args) {
  AttentionBenchSettings s = settings_from(args);
  const std::vector<AttentionBenchCase> cases = cases_from(args, s);
  if (!args.json) print_header(s);
  for (const AttentionBenchCase& c : cases) {
    const AttentionBenchResult r = run_attention_bench(c, s);
    // Flushed per case: a long run shows its progress, and a killed one keeps its finished cases.
    if (args.json) {
      std::cout << to_json(r, s).dump() << std::endl;
    } else {
      print_row(r);
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace

Action add_bench(CLI::App& app) {
  CLI::App* bench = app.add_subcommand("bench", "time gattn's kernels");
  bench->require_subcommand(1);
  auto args = std::make_shared<BenchAttentionArgs>();
  CLI::App* cmd = bench->add_subcommand("attention",
                                        "time ops::flash_attention forward and backward per gate kind (TFLOP/s: "
                                        "4·B·H·T²·d/2 forward, 2.5× that backward)");
  cmd->add_option("--device", args->device, "cpu or cuda (default: cuda when a device is usable, else cpu)");
  cmd->add_option("--dtype", args->dtype, "bf16 (CUDA only), f32 or f64 (default: bf16 on cuda, f32 on cpu)");
  cmd->add_option("--kinds", args->kinds, "gate kinds, comma-separated (default: none and every registered kind)");
  cmd->add_option("--T", args->T, "sequence lengths, comma-separated")->capture_default_str();
  cmd->add_option("--heads-dim", args->heads_dim, "head count x head dim pairs, comma-separated")
      ->capture_default_str();
  cmd->add_option("--kv-heads", args->kv_heads,
                  "key/value head counts, comma-separated, each dividing every head count (grouped-query "
                  "attention; default: as many as the query heads)");
  cmd->add_option("--tokens", args->tokens, "tokens per case: batch = max(1, tokens / T)")->capture_default_str();
  cmd->add_option("--warmup", args->warmup, "untimed iterations per case")->capture_default_str();
  cmd->add_option("--iters", args->iters, "timed iterations per case (the median is reported)")->capture_default_str();
  cmd->add_option("--seed", args->seed, "seed of the random inputs")->capture_default_str();
  cmd->add_flag("--json", args->json, "one JSON object per case and line instead of a table");
  const Action generate = add_bench_generate(*bench);
  return [args, cmd, generate] { return cmd->parsed() ? run_bench_attention(*args) : generate(); };
}

}  // namespace gattn::recipes
