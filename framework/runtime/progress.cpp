// Progress line formatting and drawing.
#include "framework/runtime/progress.h"

#include <unistd.h>

#include <cmath>

namespace gattn {

ProgressDisplay::ProgressDisplay(std::int64_t max_steps, bool live, std::FILE* out)
    : max_steps_(max_steps), live_(live), out_(out) {}

bool ProgressDisplay::is_tty(std::FILE* f) { return ::isatty(::fileno(f)) == 1; }

std::string ProgressDisplay::format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  auto s = static_cast<long long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, (s % 3600) / 60);
  else if (s >= 60)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%llds", s);
  return buf;
}

std::string ProgressDisplay::format(const ProgressState& s) const {
  char buf[256];
  const int width = static_cast<int>(std::to_string(max_steps_).size());
  const double frac = max_steps_ > 0 ? static_cast<double>(s.step) / static_cast<double>(max_steps_) : 0.0;
  const double eta =
      s.step > 0 ? s.elapsed_s / static_cast<double>(s.step) * static_cast<double>(max_steps_ - s.step) : NAN;
  const double tps = s.tokens_per_s;
  char rate[32];
  if (tps >= 1e6)
    std::snprintf(rate, sizeof rate, "%.2fM", tps / 1e6);
  else if (tps >= 1e3)
    std::snprintf(rate, sizeof rate, "%.1fk", tps / 1e3);
  else
    std::snprintf(rate, sizeof rate, "%.0f", tps);
  int n = std::snprintf(buf, sizeof buf, "step %*lld/%lld (%3.0f%%) | loss %.4f | lr %.2e | %s tok/s | ETA %s", width,
                        static_cast<long long>(s.step), static_cast<long long>(max_steps_), 100.0 * frac, s.loss, s.lr,
                        rate, format_duration(eta).c_str());
  std::string line(buf, static_cast<std::size_t>(n > 0 ? n : 0));
  if (s.gate_mean) {
    char g[32];
    std::snprintf(g, sizeof g, " | gate %.3f", *s.gate_mean);
    line.append(g);
  }
  return line;
}

void ProgressDisplay::update(const ProgressState& s) {
  std::string line = format(s);
  if (live_) {
    // \r and "erase to end of line" redraw in place without leaving stale characters.
    std::fprintf(out_, "\r%s\033[K", line.c_str());
    line_open_ = true;
  } else {
    std::fprintf(out_, "%s\n", line.c_str());
  }
  std::fflush(out_);
}

void ProgressDisplay::message(const std::string& text) {
  if (live_ && line_open_) std::fprintf(out_, "\r\033[K");
  std::fprintf(out_, "%s\n", text.c_str());
  line_open_ = false;
  std::fflush(out_);
}

void ProgressDisplay::finish() {
  if (live_ && line_open_) std::fprintf(out_, "\n");
  line_open_ = false;
  std::fflush(out_);
}

}  // namespace gattn
