#include "core/autograd/op_profile.h"

#include <atomic>
#include <chrono>
#include <thread>

namespace gattn::autograd::profile {

namespace {
std::atomic<bool> g_enabled{false};
std::thread::id g_owner;                 // the thread that enabled the profile: the only one recorded
std::map<std::string, OpTimes> g_times;  // touched only by g_owner
std::int64_t g_lap_ns = 0;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

bool enabled() { return g_enabled.load(std::memory_order_relaxed) && std::this_thread::get_id() == g_owner; }

void enable(bool on) {
  if (on) {
    g_times.clear();
    g_lap_ns = now_ns();
    g_owner = std::this_thread::get_id();
  }
  g_enabled.store(on, std::memory_order_relaxed);
}

void forward_recorded(const char* op) {
  if (!enabled()) return;
  const std::int64_t now = now_ns();
  OpTimes& t = g_times[op];
  t.forward_s += 1e-9 * static_cast<double>(now - g_lap_ns);
  ++t.forward_calls;
  g_lap_ns = now;
}

BackwardTimer::BackwardTimer(const char* name) : name_(name), start_ns_(enabled() ? now_ns() : 0) {}

BackwardTimer::~BackwardTimer() {
  if (!enabled() || start_ns_ == 0) return;
  OpTimes& t = g_times[name_];
  t.backward_s += 1e-9 * static_cast<double>(now_ns() - start_ns_);
  ++t.backward_calls;
}

Section::Section(const char* name) : name_(name), start_ns_(enabled() ? now_ns() : 0) {}

Section::~Section() {
  if (!enabled() || start_ns_ == 0) return;
  const std::int64_t now = now_ns();
  OpTimes& t = g_times[name_];
  t.forward_s += 1e-9 * static_cast<double>(now - start_ns_);
  ++t.forward_calls;
  g_lap_ns = now;
}

std::map<std::string, OpTimes> snapshot() { return g_times; }

}  // namespace gattn::autograd::profile
