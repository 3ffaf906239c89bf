// The emulated device's memory (see device_arena.h): a first-fit free list over one reserved range,
// 256-byte aligned like cudaMalloc, and the SIGSEGV handler that explains a host access to it.
#include "emulation/device_arena.h"

#include <execinfo.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <new>

namespace gattn::emu {

namespace {

constexpr std::size_t kAlign = 256;

std::size_t env_megabytes(const char* name, std::size_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  const long long mb = std::atoll(v);
  return mb > 0 ? static_cast<std::size_t>(mb) << 20 : fallback;
}

struct Arena {
  std::mutex mu;
  char* base = nullptr;
  std::size_t capacity = 0;
  std::size_t high_water = 0;  // bytes of the range ever handed out: what the guard toggles
  std::size_t in_use = 0;
  std::map<std::size_t, std::size_t> free_blocks;  // offset -> bytes
  std::map<std::size_t, std::size_t> used_blocks;  // offset -> bytes (as asked, before rounding)
  std::map<std::size_t, std::size_t> reserved;     // offset -> bytes (rounded)
  int access_depth = 0;
  bool guard = true;
  std::map<const char*, std::size_t> pinned;  // start -> bytes
};

Arena& arena();

void on_segv(int sig, siginfo_t* info, void* uctx);

void install_fault_handler() {
  struct sigaction sa {};
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, nullptr);
}

Arena& arena() {
  static Arena* a = [] {
    auto* ar = new Arena;  // never destroyed: tensors in statics are freed after any destructor
    ar->capacity = env_megabytes("GATTN_EMU_DEVICE_MEMORY_MB", std::size_t{8} << 30);
    void* m = mmap(nullptr, ar->capacity, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
    ar->base = static_cast<char*>(m);
    ar->free_blocks[0] = ar->capacity;
    const char* g = std::getenv("GATTN_EMU_GUARD");
    ar->guard = !(g && std::strcmp(g, "0") == 0);
    if (!ar->guard) mprotect(ar->base, ar->capacity, PROT_READ | PROT_WRITE);
    install_fault_handler();
    return ar;
  }();
  return *a;
}

// Async-signal-safe formatting for the fault handler.
void write_str(const char* s) { (void)!write(2, s, std::strlen(s)); }
void write_hex(std::uintptr_t v) {
  char buf[19] = "0x";
  for (int i = 0; i < 16; ++i) buf[2 + i] = "0123456789abcdef"[(v >> (60 - 4 * i)) & 0xf];
  buf[18] = 0;
  write_str(buf);
}

void on_segv(int sig, siginfo_t* info, void*) {
  Arena& a = arena();
  const char* addr = static_cast<const char*>(info->si_addr);
  if (addr >= a.base && addr < a.base + a.capacity) {
    write_str("\ngattn CUDA emulation: host code touched device memory at ");
    write_hex(reinterpret_cast<std::uintptr_t>(addr));
    write_str(
        " outside any kernel, copy or library call (on a GPU this reads garbage or faults).\n"
        "The host stack at the access:\n");
    void* frames[48];
    const int n = backtrace(frames, 48);
    backtrace_symbols_fd(frames, n, 2);
  }
  // SA_RESETHAND restored the default action: re-raise so the process ends by the signal.
  raise(sig);
}

std::size_t round_up(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

void set_protection(Arena& a, bool open) {
  if (!a.guard || a.high_water == 0) return;
  mprotect(a.base, a.high_water, open ? PROT_READ | PROT_WRITE : PROT_NONE);
}

}  // namespace

void* device_malloc(std::size_t bytes) {
  Arena& a = arena();
  std::lock_guard<std::mutex> lock(a.mu);
  const std::size_t size = round_up(bytes == 0 ? 1 : bytes);
  for (auto it = a.free_blocks.begin(); it != a.free_blocks.end(); ++it) {
    if (it->second < size) continue;
    const std::size_t offset = it->first, rest = it->second - size;
    a.free_blocks.erase(it);
    if (rest) a.free_blocks[offset + size] = rest;
    a.used_blocks[offset] = bytes;
    a.reserved[offset] = size;
    a.in_use += size;
    if (offset + size > a.high_water) {
      const std::size_t old = a.high_water;
      a.high_water = offset + size;
      // Newly handed-out pages take the current protection (open while another thread holds a
      // DeviceAccess). mprotect wants a page-aligned start, and `old` is only 256-byte aligned.
      if (a.guard && a.access_depth > 0) {
        const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
        const std::size_t from = old / page * page;
        mprotect(a.base + from, a.high_water - from, PROT_READ | PROT_WRITE);
      }
    }
    return a.base + offset;
  }
  return nullptr;
}

bool device_free(void* p) {
  Arena& a = arena();
  std::lock_guard<std::mutex> lock(a.mu);
  auto* c = static_cast<char*>(p);
  if (c < a.base || c >= a.base + a.capacity) return false;
  const auto offset = static_cast<std::size_t>(c - a.base);
  auto it = a.reserved.find(offset);
  if (it == a.reserved.end()) return false;
  std::size_t start = offset, size = it->second;
  a.reserved.erase(it);
  a.used_blocks.erase(offset);
  a.in_use -= size;
  // Give the pages back; the next allocation here reads zeros, not the old tensor.
  madvise(a.base + offset, size, MADV_DONTNEED);
  auto next = a.free_blocks.lower_bound(start);
  if (next != a.free_blocks.end() && next->first == start + size) {
    size += next->second;
    next = a.free_blocks.erase(next);
  }
  if (next != a.free_blocks.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      size += prev->second;
      a.free_blocks.erase(prev);
    }
  }
  a.free_blocks[start] = size;
  return true;
}

Allocation find_device_allocation(const void* p) {
  Arena& a = arena();
  const auto* c = static_cast<const char*>(p);
  if (c < a.base || c >= a.base + a.capacity) return {};
  std::lock_guard<std::mutex> lock(a.mu);
  const auto offset = static_cast<std::size_t>(c - a.base);
  auto it = a.used_blocks.upper_bound(offset);
  if (it == a.used_blocks.begin()) return {};
  --it;
  if (offset >= it->first + std::max<std::size_t>(it->second, 1)) return {};
  return {a.base + it->first, it->second};
}

bool is_device_pointer(const void* p) { return find_device_allocation(p).bytes > 0; }

void* pinned_malloc(std::size_t bytes) {
  void* p = std::aligned_alloc(kAlign, round_up(bytes == 0 ? 1 : bytes));
  if (!p) return nullptr;
  Arena& a = arena();
  std::lock_guard<std::mutex> lock(a.mu);
  a.pinned[static_cast<const char*>(p)] = bytes;
  return p;
}

bool pinned_free(void* p) {
  Arena& a = arena();
  {
    std::lock_guard<std::mutex> lock(a.mu);
    if (a.pinned.erase(static_cast<const char*>(p)) == 0) return false;
  }
  std::free(p);
  return true;
}

Allocation find_pinned_allocation(const void* p) {
  Arena& a = arena();
  std::lock_guard<std::mutex> lock(a.mu);
  const auto* c = static_cast<const char*>(p);
  auto it = a.pinned.upper_bound(c);
  if (it == a.pinned.begin()) return {};
  --it;
  if (c >= it->first + std::max<std::size_t>(it->second, 1)) return {};
  return {it->first, it->second};
}

bool device_accessible_range(const void* p, std::size_t bytes, std::string& why) {
  Allocation alloc = find_device_allocation(p);
  const char* kind = "device";
  if (alloc.bytes == 0) {
    alloc = find_pinned_allocation(p);
    kind = "pinned host";
  }
  char addr[32];
  std::snprintf(addr, sizeof addr, "%p", p);
  if (alloc.bytes == 0) {
    why = std::string(addr) + " is neither device memory nor pinned host memory";
    return false;
  }
  const auto* c = static_cast<const char*>(p);
  if (c + bytes > alloc.begin + alloc.bytes) {
    why = std::to_string(bytes) + " bytes at " + addr + " run past the end of its " + kind + " allocation (" +
          std::to_string(alloc.bytes) + " bytes, starting " + std::to_string(c - alloc.begin) + " bytes before)";
    return false;
  }
  return true;
}

DeviceAccess::DeviceAccess() {
  Arena& a = arena();
  std::lock_guard<std::mutex> lock(a.mu);
  if (a.access_depth++ == 0) set_protection(a, true);
}

DeviceAccess::~DeviceAccess() {
  Arena& a = arena();
  std::lock_guard<std::mutex> lock(a.mu);
  if (--a.access_depth == 0) set_protection(a, false);
}

std::size_t device_capacity() { return arena().capacity; }
std::size_t device_bytes_in_use() {
  Arena& a = arena();
  std::lock_guard<std::mutex> lock(a.mu);
  return a.in_use;
}

}  // namespace gattn::emu
