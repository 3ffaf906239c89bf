// Encode throughput of a Hugging Face tokenizer (HfTokenizer) on one thread: the text encoded as
// one string, and line by line (each line with its newline, as `tokenizers`' users often feed a
// file), best of --repeat runs each, after one warm-up run. benchmarks/scripts/hf_tokenizer_throughput.sh
// runs it beside `tokenizers` (benchmarks/scripts/hf_tokenizer_throughput.py) and prints the table.
// A plain program, not Google Benchmark: one timed loop per mode is all it needs.
// Run: ./build/benchmarks/gattn_hf_tokenizer_throughput DIR TEXT [REPEAT]
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "framework/base/errors.h"
#include "framework/base/input_file.h"
#include "framework/text/hf_tokenizer.h"

namespace {

using gattn::HfTokenizer;

// Seconds and tokens of the fastest of `repeat` runs of `encode`.
template <class F>
std::pair<double, std::size_t> best(int repeat, F&& encode) {
  double seconds = 1e30;
  std::size_t tokens = encode();  // warm-up: the word cache fills as it would in a long run
  for (int r = 0; r < repeat; ++r) {
    const auto start = std::chrono::steady_clock::now();
    tokens = encode();
    seconds = std::min(seconds, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return {seconds, tokens};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s TOKENIZER_DIR TEXT_FILE [REPEAT]\n", argv[0]);
    return 2;
  }
  const int repeat = argc > 3 ? std::stoi(argv[3]) : 5;
  try {
    const auto tokenizer = HfTokenizer::load(argv[1]);
    const std::string text = gattn::read_input_file<gattn::DataError>(argv[2], "the text");
    std::vector<std::string> lines;
    for (std::size_t at = 0; at < text.size();) {
      std::size_t end = text.find('\n', at);
      end = end == std::string::npos ? text.size() : end + 1;
      lines.push_back(text.substr(at, end - at));
      at = end;
    }
    const auto whole = best(repeat, [&] { return tokenizer->encode(text).size(); });
    const auto by_line = best(repeat, [&] {
      std::size_t n = 0;
      for (const std::string& line : lines) n += tokenizer->encode(line).size();
      return n;
    });
    for (const auto& [mode, r] : {std::pair{"whole", whole}, std::pair{"lines", by_line}})
      std::printf("%s %.3f MB/s %.0f tokens/s %zu tokens %.4f s\n", mode, text.size() / r.first / 1e6,
                  r.second / r.first, r.second, r.first);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 3;
  }
  return 0;
}
