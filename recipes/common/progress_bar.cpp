// ProgressBar: carriage-return redraws, throttled.
#include "recipes/common/progress_bar.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>

namespace gattn::recipes {

namespace {

std::string bytes_text(double bytes) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB"};
  int u = 0;
  while (bytes >= 1000 && u < 4) {
    bytes /= 1000;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", bytes, units[u]);
  return buf;
}

std::string clock_text(double seconds) {
  const auto s = static_cast<long long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%lld:%02lld", s / 60, s % 60);
  return buf;
}

}  // namespace

ProgressBar::ProgressBar(std::string label)
    : label_(std::move(label)), enabled_(::isatty(STDERR_FILENO) == 1), start_(std::chrono::steady_clock::now()) {}

std::string ProgressBar::render(std::uint64_t done, std::uint64_t total, double seconds) {
  constexpr int kWidth = 24;
  const double fraction = total ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
  const int filled = static_cast<int>(fraction * kWidth);
  std::string bar = "[";
  bar.append(static_cast<std::size_t>(filled), '#').append(static_cast<std::size_t>(kWidth - filled), '.').append("]");
  const double rate = seconds > 0 ? static_cast<double>(done) / seconds : 0;
  char buf[64];
  std::snprintf(buf, sizeof buf, " %3d%%  ", static_cast<int>(100 * fraction));
  std::string out = bar;
  out.append(buf).append(bytes_text(rate)).append("/s");
  if (rate > 0 && done < total) out += "  ETA " + clock_text(static_cast<double>(total - done) / rate);
  return out;
}

void ProgressBar::update(std::uint64_t done, std::uint64_t total) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && now - last_draw_ < std::chrono::milliseconds(200) && done < total) return;
  last_draw_ = now;
  drawn_ = true;
  const double seconds = std::chrono::duration<double>(now - start_).count();
  std::cerr << "\r" << label_ << " " << render(done, total, seconds) << "\033[K" << std::flush;
}

void ProgressBar::finish() {
  if (enabled_ && drawn_) std::cerr << "\n";
  drawn_ = false;
}

}  // namespace gattn::recipes
