// metrics.jsonl (docs/run-directory.md): one JSON object per line, appended and flushed line by line so a crash
// loses at most the line being written and `tail -f` shows progress.
#pragma once
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gattn {

class MetricsWriter {
 public:
  // Opens `path` for appending (creating it). Throws CheckpointError naming the file on failure.
  explicit MetricsWriter(const std::string& path);
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter&) = delete;
  MetricsWriter& operator=(const MetricsWriter&) = delete;

  // Writes `record` as one line. Non-finite numbers become null (JSON has no NaN), so a diverged
  // run still leaves a parseable file.
  void write(const nlohmann::json& record);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
};

// Reads every line of a metrics.jsonl file (tests, reports). Throws CheckpointError on a line that
// is not a JSON object.
std::vector<nlohmann::json> read_metrics(const std::string& path);

}  // namespace gattn
