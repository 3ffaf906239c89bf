#include "recipes/bench/bench_clock.h"

#include "core/cuda/device.h"
#ifdef GATTN_WITH_CUDA
#include "core/cuda/stream.h"
#endif

namespace gattn::recipes {

#ifdef GATTN_WITH_CUDA
struct BenchClock::DeviceEvents {
  std::vector<cuda::Event> events;
};
#else
struct BenchClock::DeviceEvents {};
#endif

BenchClock::BenchClock(Device device, int marks) : device_(device), host_marks_(static_cast<std::size_t>(marks)) {
  if (device_ == Device::cpu) return;
  cuda::require_device("gattn bench");  // a CPU-only build or no GPU: a clear DeviceError
#ifdef GATTN_WITH_CUDA
  events_ = std::make_unique<DeviceEvents>();
  for (int i = 0; i < marks; ++i) events_->events.emplace_back(/*enable_timing=*/true);
#endif
}

BenchClock::~BenchClock() = default;

void BenchClock::synchronize() {
#ifdef GATTN_WITH_CUDA
  if (device_ == Device::cuda) cuda::compute_stream().synchronize();
#endif
}

void BenchClock::mark(int i) {
#ifdef GATTN_WITH_CUDA
  if (device_ == Device::cuda) {
    events_->events.at(static_cast<std::size_t>(i)).record(cuda::compute_stream());
    return;
  }
#endif
  host_marks_.at(static_cast<std::size_t>(i)) = std::chrono::steady_clock::now();
}

double BenchClock::elapsed_ms(int a, int b) {
#ifdef GATTN_WITH_CUDA
  if (device_ == Device::cuda) {
    const cuda::Event& end = events_->events.at(static_cast<std::size_t>(b));
    end.synchronize();
    return static_cast<double>(end.elapsed_ms_since(events_->events.at(static_cast<std::size_t>(a))));
  }
#endif
  return std::chrono::duration<double, std::milli>(host_marks_.at(static_cast<std::size_t>(b)) -
                                                   host_marks_.at(static_cast<std::size_t>(a)))
      .count();
}

}  // namespace gattn::recipes
