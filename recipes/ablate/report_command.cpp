// `gattn report RUN_DIR… [--output FILE] [--heads L:H,…] [--context N]`: one self-contained report.html over the
// runs (an ablation directory stands for its cells).
#include <algorithm>
#include <filesystem>
#include <iostream>

#include "framework/io/checkpoint.h"
#include "framework/io/run_files.h"
#include "recipes/ablate/ablation.h"
#include "recipes/ablate/report_writer.h"
#include "recipes/common/recipe.h"

namespace gattn::recipes {

namespace fs = std::filesystem;

namespace {

struct ReportArgs {
  std::vector<std::string> dirs;
  std::string output;
  std::string heads = "0:0,-1:0";
  std::string title = "gattn report";
  std::int64_t windows = 8;
  std::int64_t sample_tokens = 64;
  std::int64_t context = 0;
};

// A run directory as given; an ablation directory (no metrics.jsonl, a cells/ folder) as its cells.
std::vector<std::string> expand_dirs(const std::vector<std::string>& dirs) {
  std::vector<std::string> out;
  for (const std::string& d : dirs) {
    if (!fs::is_directory(d)) throw UsageError("report: " + d + " is not a directory");
    if (!fs::exists(fs::path(d) / "metrics.jsonl") && fs::is_directory(fs::path(d) / "cells")) {
      std::vector<std::string> cells;
      for (const auto& e : fs::directory_iterator(fs::path(d) / "cells"))
        if (e.is_directory()) cells.push_back(e.path().string());
      std::sort(cells.begin(), cells.end());
      if (cells.empty()) throw UsageError("report: the ablation directory " + d + " has no cells yet");
      out.insert(out.end(), cells.begin(), cells.end());
    } else {
      out.push_back(d);
    }
  }
  return out;
}

int run_report(const ReportArgs& args) {
  ReportRequest request;
  request.run_dirs = expand_dirs(args.dirs);
  request.output = !args.output.empty()    ? args.output
                   : args.dirs.size() == 1 ? (fs::path(args.dirs[0]) / "report.html").string()
                                           : std::string("report.html");
  request.options.heads = parse_heads(args.heads);
  request.options.title = args.title;
  request.windows = args.windows;
  request.sample_tokens = args.sample_tokens;
  request.context = args.context;
  const std::uintmax_t bytes = write_report(request);
  std::cout << "report: " << request.output << " (" << request.run_dirs.size() << " run(s), " << (bytes + 512) / 1024
            << " KB)\n";
  return 0;
}

}  // namespace

Action add_report(CLI::App& app) {
  auto args = std::make_shared<ReportArgs>();
  CLI::App* cmd = app.add_subcommand("report", "write one self-contained report.html comparing run directories");
  cmd->add_option("dirs", args->dirs, "run directories (an ablation directory stands for its cells)")->required();
  cmd->add_option("-o,--output", args->output,
                  "the HTML file (default: DIR/report.html for one directory, ./report.html for several)");
  cmd->add_option(
         "--heads", args->heads,
         "attention maps to draw, LAYER:HEAD,… (-1 = last layer; encoder–decoder runs: the decoder's self- and "
         "cross-attention heads)")
      ->capture_default_str();
  cmd->add_option("--title", args->title, "the page title")->capture_default_str();
  cmd->add_option("--windows", args->windows, "val windows whose gate values fill the histograms")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_option("--sample-tokens", args->sample_tokens, "positions of the sample text (at most the block size)")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--context", args->context,
                  "the loss-by-position chart's window length (default: each run's block size; longer than a "
                  "block only for model.position rope or none)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 24));
  return [args] { return run_report(*args); };
}

}  // namespace gattn::recipes
