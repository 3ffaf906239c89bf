// Training windows per second drawn from memory-mapped llm.c shards (data.kind tokens) against an
// in-memory copy of the same tokens cut by the same WindowedDataset code (as text data is), at the
// quick-start batch (B=12, T=64) and a GPT-2 batch (B=8, T=1024). The shards are 64M tokens (128 MB)
// in 8 files written to a temporary folder and removed at the end; the page cache holds them, as it
// does for any data set read more than once.
// Run: ./build/benchmarks/gattn_bench_data [--benchmark_filter=Mapped]
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor/random.h"
#include "framework/data/dataset.h"
#include "framework/data/windowed_dataset.h"

namespace {

namespace fs = std::filesystem;
using gattn::data_detail::TokenVector;

constexpr std::int64_t kShards = 8;
constexpr std::int64_t kShardTokens = 8 << 20;
constexpr std::int64_t kValTokens = 1 << 16;

// The same stream in memory: the reference the mapped shards are measured against.
class InMemoryTokens : public gattn::data_detail::WindowedDataset {
 public:
  InMemoryTokens(std::vector<std::uint16_t> train, std::vector<std::uint16_t> val) {
    source_ = "memory";
    train_ = std::make_unique<TokenVector>(std::move(train));
    val_ = std::make_unique<TokenVector>(std::move(val));
  }
  std::int64_t vocab_size() const override { return 50257; }
  std::string describe() const override { return source_; }
};

std::vector<std::uint16_t> random_tokens(std::int64_t n, std::uint32_t seed) {
  std::vector<std::uint16_t> v(static_cast<std::size_t>(n));
  std::uint32_t s = seed;
  for (auto& t : v) {
    s = s * 1664525u + 1013904223u;
    t = static_cast<std::uint16_t>((s >> 8) % 50257);
  }
  return v;
}

void write_shard(const fs::path& path, const std::uint16_t* tokens, std::int64_t n) {
  std::vector<std::int32_t> header(256, 0);
  header[0] = 20240520;
  header[1] = 1;
  header[2] = static_cast<std::int32_t>(n);
  std::ofstream out(path, std::ios::binary);
  // Little-endian, like the format, on the machines gattn runs on.
  out.write(reinterpret_cast<const char*>(header.data()), 1024);
  out.write(reinterpret_cast<const char*>(tokens), static_cast<std::streamsize>(2 * n));
}

// The shards on disk, both datasets over them, and the folder removed when done.
struct Data {
  fs::path dir;
  std::unique_ptr<gattn::Dataset> mapped, memory;

  Data() {
    dir = fs::temp_directory_path() / ("gattn_bench_data_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    std::vector<std::uint16_t> train = random_tokens(kShards * kShardTokens, 1), val = random_tokens(kValTokens, 2);
    for (std::int64_t i = 0; i < kShards; ++i)
      write_shard(dir / ("train_" + std::to_string(i) + ".bin"), train.data() + i * kShardTokens, kShardTokens);
    write_shard(dir / "val_0.bin", val.data(), kValTokens);
    gattn::DataOptions o;
    o.kind = "tokens";
    o.path = dir.string();
    o.vocab_size = 50257;
    mapped = gattn::make_dataset(o, 1024);
    memory = std::make_unique<InMemoryTokens>(std::move(train), std::move(val));
  }
  ~Data() {
    mapped.reset();
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

void BM_TrainWindows(benchmark::State& state, const gattn::Dataset* data) {
  const std::int64_t batch = state.range(0), block = state.range(1);
  gattn::Generator gen(7);
  for (auto _ : state) benchmark::DoNotOptimize(data->sample_train(batch, block, gen));
  state.counters["windows/s"] =
      benchmark::Counter(static_cast<double>(batch), benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  Data data;
  for (auto [name, dataset] : {std::pair{"Mapped", data.mapped.get()}, std::pair{"InMemory", data.memory.get()}})
    benchmark::RegisterBenchmark((std::string("BM_TrainWindows/") + name).c_str(), BM_TrainWindows, dataset)
        ->ArgNames({"B", "T"})
        ->Args({12, 64})
        ->Args({8, 1024})
        ->Unit(benchmark::kMicrosecond);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
