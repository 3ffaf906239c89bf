// Fiber scheduling of one kernel launch (see grid.h). Blocks run one after another; inside a block
// the fibers run round-robin, each until it waits at a barrier or finishes, so the order of memory
// effects is deterministic from run to run.
#include "emulation/grid.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "emulation/fiber.h"

namespace gattn::emu {

thread_local ThreadState* g_current_thread = nullptr;

namespace {

// Big enough for the flash kernels' register tiles at head dim 128 built without optimisation;
// only the pages a fiber touches are ever backed by memory.
constexpr std::size_t kStackBytes = 512u << 10;

enum class Wait { none, block, warp };

struct Barrier {
  int live = 0, arrived = 0;
  unsigned generation = 0;
};

struct Fiber {
  ThreadState state;
  Context context;
  bool started = false, done = false;
  Wait wait = Wait::none;
  unsigned wait_generation = 0;
};

struct Block {
  std::vector<std::unique_ptr<Fiber>> fibers;
  std::vector<std::unique_ptr<FiberStack>> stacks;
  int threads = 0;
  Barrier block;
  std::vector<Barrier> warps;
  std::vector<unsigned char> warp_slots;  // warps × 32 lanes × kWarpSlotBytes
  // Block-wide predicate reductions of the __syncthreads_* variants: pending until the barrier
  // releases, then the result every released thread reads before it can reach the next barrier.
  int or_pending = 0, and_pending = 1, count_pending = 0;
  int or_result = 0, and_result = 1, count_result = 0;
  std::vector<unsigned char> dynamic_shared;
  Context scheduler;
  Fiber* running = nullptr;
  void (*thread_main)(void*) = nullptr;
  void* closure = nullptr;
};

// One per OS thread: a launch runs on the thread that makes it.
thread_local Block* g_block = nullptr;

Block& this_block() {
  static thread_local std::unique_ptr<Block> block;
  if (!block) block = std::make_unique<Block>();
  return *block;
}

void release(Barrier& b, Block& blk, bool block_level) {
  b.arrived = 0;
  ++b.generation;
  if (block_level) {
    blk.or_result = blk.or_pending;
    blk.and_result = blk.and_pending;
    blk.count_result = blk.count_pending;
    blk.or_pending = 0;
    blk.and_pending = 1;
    blk.count_pending = 0;
  }
}

// The running fiber waits at `b` until every live member has arrived.
void arrive(Barrier& b, Wait kind) {
  Block& blk = *g_block;
  Fiber& f = *blk.running;
  f.wait = kind;
  f.wait_generation = b.generation;
  if (++b.arrived == b.live) release(b, blk, kind == Wait::block);
  Context::switch_to(f.context, blk.scheduler);
}

void fiber_main(void* arg) {
  auto* f = static_cast<Fiber*>(arg);
  Block& blk = *g_block;
  blk.thread_main(blk.closure);
  f->done = true;
  // An exited thread no longer holds back the barriers it would have reached (as on the GPU).
  --blk.block.live;
  if (blk.block.arrived > 0 && blk.block.arrived == blk.block.live) release(blk.block, blk, true);
  Barrier& w = blk.warps[static_cast<std::size_t>(f->state.warp)];
  --w.live;
  if (w.arrived > 0 && w.arrived == w.live) release(w, blk, false);
  Context::switch_to(f->context, blk.scheduler);
}

bool blocked(const Fiber& f, const Block& blk) {
  if (f.wait == Wait::block) return f.wait_generation == blk.block.generation;
  if (f.wait == Wait::warp) return f.wait_generation == blk.warps[static_cast<std::size_t>(f.state.warp)].generation;
  return false;
}

std::string deadlock_message(const Block& blk, const LaunchShape& shape, const uint3& b) {
  int at_block = 0, at_warp = 0;
  for (int i = 0; i < blk.threads; ++i) {
    const Fiber& f = *blk.fibers[static_cast<std::size_t>(i)];
    if (f.done) continue;
    if (f.wait == Wait::block) ++at_block;
    if (f.wait == Wait::warp) ++at_warp;
  }
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "emulated kernel deadlocked in block (%u,%u,%u) of a grid (%u,%u,%u): %d threads wait at __syncthreads "
                "and %d at a warp exchange that the other threads never reach",
                b.x, b.y, b.z, shape.grid.x, shape.grid.y, shape.grid.z, at_block, at_warp);
  return buf;
}

bool run_block(Block& blk, const LaunchShape& shape, const uint3& block_idx, std::string& error) {
  const int n = blk.threads;
  blk.block = Barrier{n, 0, 0};
  const int n_warps = (n + kWarpSize - 1) / kWarpSize;
  for (int w = 0; w < n_warps; ++w)
    blk.warps[static_cast<std::size_t>(w)] = Barrier{std::min(kWarpSize, n - w * kWarpSize), 0, 0};
  blk.or_pending = blk.count_pending = 0;
  blk.and_pending = 1;
  if (!blk.dynamic_shared.empty()) std::memset(blk.dynamic_shared.data(), 0xff, blk.dynamic_shared.size());
  for (int i = 0; i < n; ++i) {
    Fiber& f = *blk.fibers[static_cast<std::size_t>(i)];
    const unsigned bx = shape.block.x, by = shape.block.y;
    const auto u = static_cast<unsigned>(i);
    f.state.thread_idx = make_uint3(u % bx, (u / bx) % by, u / (bx * by));
    f.state.block_idx = block_idx;
    f.state.block_dim = shape.block;
    f.state.grid_dim = shape.grid;
    f.state.lane = i % kWarpSize;
    f.state.warp = i / kWarpSize;
    f.started = f.done = false;
    f.wait = Wait::none;
  }
  int live = n;
  while (live > 0) {
    bool ran = false;
    for (int i = 0; i < n; ++i) {
      Fiber& f = *blk.fibers[static_cast<std::size_t>(i)];
      if (f.done || blocked(f, blk)) continue;
      f.wait = Wait::none;
      if (!f.started) {
        f.context.start(*blk.stacks[static_cast<std::size_t>(i)], fiber_main, &f);
        f.started = true;
      }
      g_current_thread = &f.state;
      blk.running = &f;
      Context::switch_to(blk.scheduler, f.context);
      ran = true;
      if (f.done) --live;
    }
    if (!ran) {
      error = deadlock_message(blk, shape, block_idx);
      return false;
    }
  }
  return true;
}

}  // namespace

void block_barrier() { arrive(g_block->block, Wait::block); }

int block_barrier_or(int predicate) {
  if (predicate) g_block->or_pending = 1;
  arrive(g_block->block, Wait::block);
  return g_block->or_result;
}

int block_barrier_and(int predicate) {
  if (!predicate) g_block->and_pending = 0;
  arrive(g_block->block, Wait::block);
  return g_block->and_result;
}

int block_barrier_count(int predicate) {
  if (predicate) ++g_block->count_pending;
  arrive(g_block->block, Wait::block);
  return g_block->count_result;
}

const unsigned char* warp_publish(const void* bytes, std::size_t n) {
  Block& blk = *g_block;
  const ThreadState& t = *g_current_thread;
  unsigned char* warp_table = blk.warp_slots.data() + static_cast<std::size_t>(t.warp) * kWarpSize * kWarpSlotBytes;
  if (n) std::memcpy(warp_table + static_cast<std::size_t>(t.lane) * kWarpSlotBytes, bytes, n);
  arrive(blk.warps[static_cast<std::size_t>(t.warp)], Wait::warp);
  return warp_table;
}

void warp_release() { arrive(g_block->warps[static_cast<std::size_t>(g_current_thread->warp)], Wait::warp); }

unsigned char* dynamic_shared_memory() { return g_block->dynamic_shared.data(); }

cudaError_t run_grid(const LaunchShape& shape, void (*thread_main)(void*), void* closure, std::string& error) {
  Block& blk = this_block();
  const int n = static_cast<int>(shape.block.x * shape.block.y * shape.block.z);
  while (static_cast<int>(blk.fibers.size()) < n) {
    blk.fibers.push_back(std::make_unique<Fiber>());
    blk.stacks.push_back(std::make_unique<FiberStack>(kStackBytes));
  }
  blk.threads = n;
  blk.warps.assign(static_cast<std::size_t>((n + kWarpSize - 1) / kWarpSize), Barrier{});
  blk.warp_slots.assign(blk.warps.size() * kWarpSize * kWarpSlotBytes, 0);
  blk.dynamic_shared.assign(shape.dynamic_shared_bytes, 0);
  blk.thread_main = thread_main;
  blk.closure = closure;
  Block* outer = g_block;
  ThreadState* outer_thread = g_current_thread;
  g_block = &blk;
  cudaError_t status = cudaSuccess;
  for (unsigned z = 0; z < shape.grid.z && status == cudaSuccess; ++z)
    for (unsigned y = 0; y < shape.grid.y && status == cudaSuccess; ++y)
      for (unsigned x = 0; x < shape.grid.x && status == cudaSuccess; ++x)
        if (!run_block(blk, shape, make_uint3(x, y, z), error)) status = cudaErrorLaunchFailure;
  g_block = outer;
  g_current_thread = outer_thread;
  return status;
}

}  // namespace gattn::emu
