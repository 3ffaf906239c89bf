// A one-line progress bar on stderr for long commands (`gattn tokenize encode`): percent, rate and
// time left, redrawn in place at most a few times a second. Only on a terminal: a log file or a
// pipe gets no bar, only the command's summary line.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace gattn::recipes {

class ProgressBar {
 public:
  // `label` starts the line ("encoding"); the counts are bytes.
  explicit ProgressBar(std::string label);

  void update(std::uint64_t done, std::uint64_t total);
  void finish();  // ends the bar's line

  // "[#######.............]  35%  12.4 MB/s  ETA 0:07", for a terminal of any width above 60.
  static std::string render(std::uint64_t done, std::uint64_t total, double seconds);

 private:
  std::string label_;
  bool enabled_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  bool drawn_ = false;
};

}  // namespace gattn::recipes
