// Fibers for the CUDA emulation: one per emulated GPU thread, switched cooperatively at barriers
// and warp exchanges. On x86-64 a ten-instruction context switch (callee-saved registers and the
// stack pointer); elsewhere ucontext, which is ~100× slower because it saves the signal mask with a
// system call on every switch.
#pragma once
#include <cstddef>

namespace gattn::emu {

// A fiber's stack: mmap'd with a guard page below it, so an overflow faults instead of corrupting
// the neighbouring fiber.
class FiberStack {
 public:
  explicit FiberStack(std::size_t bytes);
  ~FiberStack();
  FiberStack(const FiberStack&) = delete;
  FiberStack& operator=(const FiberStack&) = delete;
  char* top() const { return base_ + bytes_; }
  char* bottom() const { return base_; }
  std::size_t size() const { return bytes_; }

 private:
  char* mapping_ = nullptr;  // guard page + stack
  char* base_ = nullptr;
  std::size_t bytes_ = 0;
};

// An execution context. `start` prepares a fresh context that calls entry(arg) on `stack`; entry
// must never return (it switches away for the last time instead).
class Context {
 public:
  Context();
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  void start(FiberStack& stack, void (*entry)(void*), void* arg);
  // Saves the current context into `from` and resumes `to`.
  static void switch_to(Context& from, Context& to);

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace gattn::emu
