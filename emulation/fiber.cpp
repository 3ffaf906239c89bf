// Fiber stacks and context switching (see fiber.h).
#include "emulation/fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

namespace gattn::emu {

namespace {
std::size_t page_size() {
  static const std::size_t p = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return p;
}
}  // namespace

FiberStack::FiberStack(std::size_t bytes) {
  const std::size_t page = page_size();
  bytes_ = (bytes + page - 1) / page * page;
  void* m = mmap(nullptr, bytes_ + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  mapping_ = static_cast<char*>(m);
  mprotect(mapping_, page, PROT_NONE);  // the guard page
  base_ = mapping_ + page;
}

FiberStack::~FiberStack() {
  if (mapping_) munmap(mapping_, bytes_ + page_size());
}

#if defined(__x86_64__)

// gattn_emu_switch(void** save_sp, void* load_sp): pushes the System V callee-saved registers,
// stores the stack pointer, loads the other context's and pops its registers. The caller-saved
// registers are the compiler's business (the switch is an ordinary call). MXCSR and the x87 control
// word are left alone: emulated kernels never change them.
asm(R"(
  .text
  .globl gattn_emu_switch
  .type gattn_emu_switch, @function
gattn_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size gattn_emu_switch, .-gattn_emu_switch

  .globl gattn_emu_fiber_entry
  .type gattn_emu_fiber_entry, @function
gattn_emu_fiber_entry:
  movq %r12, %rdi
  callq *%r13
  ud2
  .size gattn_emu_fiber_entry, .-gattn_emu_fiber_entry
)");

extern "C" void gattn_emu_switch(void** save_sp, void* load_sp);
extern "C" void gattn_emu_fiber_entry();

struct Context::Impl {
  void* sp = nullptr;
};

Context::Context() : impl_(new Impl) {}
Context::~Context() { delete impl_; }

void Context::start(FiberStack& stack, void (*entry)(void*), void* arg) {
  // The frame gattn_emu_switch pops: r15, r14, r13 = entry, r12 = arg, rbx, rbp, then the return
  // address gattn_emu_fiber_entry. After its `ret` the stack pointer is 16-byte aligned, so the
  // `call` there enters `entry` with the alignment the ABI promises.
  auto top = reinterpret_cast<std::uintptr_t>(stack.top()) & ~static_cast<std::uintptr_t>(15);
  auto* frame = reinterpret_cast<void**>(top - 16 - 56);
  frame[0] = nullptr;                                          // r15
  frame[1] = nullptr;                                          // r14
  frame[2] = reinterpret_cast<void*>(entry);                   // r13
  frame[3] = arg;                                              // r12
  frame[4] = nullptr;                                          // rbx
  frame[5] = nullptr;                                          // rbp
  frame[6] = reinterpret_cast<void*>(&gattn_emu_fiber_entry);  // return address
  impl_->sp = frame;
}

void Context::switch_to(Context& from, Context& to) { gattn_emu_switch(&from.impl_->sp, to.impl_->sp); }

#else  // portable fallback

struct Context::Impl {
  ucontext_t ctx;
};

Context::Context() : impl_(new Impl) {}
Context::~Context() { delete impl_; }

namespace {
void (*g_entry)(void*) = nullptr;
void* g_arg = nullptr;
void trampoline() { g_entry(g_arg); }
}  // namespace

void Context::start(FiberStack& stack, void (*entry)(void*), void* arg) {
  getcontext(&impl_->ctx);
  impl_->ctx.uc_stack.ss_sp = stack.bottom();
  impl_->ctx.uc_stack.ss_size = stack.size();
  impl_->ctx.uc_link = nullptr;
  // makecontext passes only ints portably; the entry and argument go through globals read on the
  // fiber's first run, which happens before the next start() (the scheduler starts fibers lazily).
  g_entry = entry;
  g_arg = arg;
  makecontext(&impl_->ctx, trampoline, 0);
}

void Context::switch_to(Context& from, Context& to) { swapcontext(&from.impl_->ctx, &to.impl_->ctx); }

#endif

}  // namespace gattn::emu
