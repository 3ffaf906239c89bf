// The CUDA execution model on the CPU: runs a kernel's grid one block at a time on the calling
// thread, each GPU thread a fiber, switching at __syncthreads and at warp exchanges (shuffles, the
// emulated mma.sync). A block whose threads cannot all make progress (a barrier some threads never
// reach, a shuffle in divergent code) is reported as a deadlock instead of hanging.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <string>

namespace gattn::emu {

constexpr int kWarpSize = 32;
constexpr std::size_t kWarpSlotBytes = 64;  // what one lane may publish in one warp exchange

// What a GPU thread knows about itself.
struct ThreadState {
  uint3 thread_idx;
  uint3 block_idx;
  dim3 block_dim;
  dim3 grid_dim;
  int lane = 0;
  int warp = 0;
};

extern thread_local ThreadState* g_current_thread;
inline ThreadState& current_thread() { return *g_current_thread; }

// ---- called from inside a kernel ----
void block_barrier();
// __syncthreads_or/_and/_count: the barrier, then the block-wide reduction of `predicate`.
int block_barrier_or(int predicate);
int block_barrier_and(int predicate);
int block_barrier_count(int predicate);
// A warp exchange: every live lane of the warp publishes up to kWarpSlotBytes; once all have, each
// may read any lane's bytes (lane-major table, kWarpSlotBytes apart) until it calls warp_release().
const unsigned char* warp_publish(const void* bytes, std::size_t n);
void warp_release();
// The block's dynamic shared memory (the launch's size; NaN bytes until written).
unsigned char* dynamic_shared_memory();

// ---- called by the launcher ----
struct LaunchShape {
  dim3 grid, block;
  std::size_t dynamic_shared_bytes = 0;
};
// Runs thread_main(closure) for every thread of the grid. Returns cudaSuccess, or an error with
// `error` saying what went wrong (a deadlocked block).
cudaError_t run_grid(const LaunchShape& shape, void (*thread_main)(void*), void* closure, std::string& error);

}  // namespace gattn::emu
