// The training terminal: a live one-line progress display (step, loss, lr, tokens/s, ETA, gate
// mean) rewritten in place on a TTY, degrading to plain log lines when stdout is a file or pipe.
#pragma once
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

namespace gattn {

struct ProgressState {
  std::int64_t step = 0;  // optimizer steps done
  double loss = 0;
  double lr = 0;
  double tokens_per_s = 0;
  double elapsed_s = 0;
  std::optional<double> gate_mean;
};

class ProgressDisplay {
 public:
  // `live`: rewrite one line in place (use is_tty(stdout) to decide).
  ProgressDisplay(std::int64_t max_steps, bool live, std::FILE* out = stdout);

  // The text of one progress line, e.g.
  // "step  120/2000 (6%) | loss 2.4312 | lr 9.80e-04 | 41.2k tok/s | ETA 3m05s | gate 0.512".
  std::string format(const ProgressState& s) const;
  // Live: redraws the line. Plain: prints it as its own line (call it at the log period).
  void update(const ProgressState& s);
  // A permanent message (eval results, checkpoints): clears the live line first.
  void message(const std::string& text);
  // Ends the live line.
  void finish();

  static bool is_tty(std::FILE* f);
  // "3m05s", "1h02m", "42s".
  static std::string format_duration(double seconds);

 private:
  std::int64_t max_steps_;
  bool live_;
  std::FILE* out_;
  bool line_open_ = false;
};

}  // namespace gattn
