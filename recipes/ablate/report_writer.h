// Writing report.html for a set of run directories (`gattn report`, and `gattn ablate` at its end).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "recipes/ablate/report_html.h"

namespace gattn::recipes {

struct ReportRequest {
  std::vector<std::string> run_dirs;  // each must hold metrics.jsonl (UsageError otherwise)
  std::string output;                 // the HTML file to write
  ReportOptions options;
  std::int64_t windows = 8;         // val windows for the gate histograms
  std::int64_t sample_tokens = 64;  // positions of the sample text (at most the block size)
  std::int64_t context = 0;         // the loss-by-position windows' length (0: each run's block size)
};

// Reads every run, probes its latest checkpoint, writes the page atomically; returns its size in bytes.
std::uintmax_t write_report(const ReportRequest& request);

}  // namespace gattn::recipes
