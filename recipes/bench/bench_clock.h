// Wall time of work queued on a device, for `gattn bench`: CUDA events on the compute stream (the
// kernels' own time, measured on the GPU's queue) or the host's steady clock on the CPU, where
// every op has finished when it returns. Kept apart so the benchmark itself needs no #ifdef.
#pragma once
#include <chrono>
#include <memory>
#include <vector>

#include "core/tensor/dtype.h"

namespace gattn::recipes {

class BenchClock {
 public:
  // `marks` points in time can be recorded per measurement (0 … marks − 1).
  BenchClock(Device device, int marks);
  ~BenchClock();
  BenchClock(const BenchClock&) = delete;
  BenchClock& operator=(const BenchClock&) = delete;

  void synchronize();  // waits until every op queued so far has finished
  void mark(int i);    // records point i (queued on the GPU, taken now on the CPU)
  // Milliseconds from mark a to mark b; waits for mark b on the GPU.
  double elapsed_ms(int a, int b);

 private:
  struct DeviceEvents;  // the CUDA events (CUDA builds only)
  Device device_;
  std::unique_ptr<DeviceEvents> events_;
  std::vector<std::chrono::steady_clock::time_point> host_marks_;
};

}  // namespace gattn::recipes
