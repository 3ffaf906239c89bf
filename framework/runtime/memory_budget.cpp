// Memory limits from sysconf, getrlimit and the cgroup (v2, then v1) this process runs in.
#include "framework/runtime/memory_budget.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace gattn {

namespace {

// A cgroup limit file's number of bytes, or 0 when it is absent, "max" or unreadable. These are
// fixed kernel paths, not user input, so a plain stream is fine.
double cgroup_limit(const char* path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return 0;
  try {
    return std::stod(text);
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

MemoryBudget memory_budget() {
  MemoryBudget b;
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) b = {static_cast<double>(pages) * static_cast<double>(page), "physical memory"};
  auto consider = [&](double bytes, const char* source) {
    if (bytes > 0 && (b.bytes <= 0 || bytes < b.bytes)) b = {bytes, source};
  };
  struct rlimit as {};
  if (::getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY)
    consider(static_cast<double>(as.rlim_cur), "ulimit -v");
  consider(cgroup_limit("/sys/fs/cgroup/memory.max"), "cgroup memory.max");
  // cgroup v1 reports "no limit" as a number near 2^63: consider() keeps physical memory then.
  consider(cgroup_limit("/sys/fs/cgroup/memory/memory.limit_in_bytes"), "cgroup memory limit");
  return b;
}

std::string memory_shortfall(double bytes, const std::string& what) {
  const MemoryBudget b = memory_budget();
  if (b.bytes <= 0 || bytes <= b.bytes) return "";
  return "needs about " + format_bytes(bytes) + " (" + what + "), more than the " + format_bytes(b.bytes) +
         " this process may use (" + b.source + ")";
}

std::string format_bytes(double bytes) {
  static const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024 && u < 6) {
    bytes /= 1024;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

}  // namespace gattn
