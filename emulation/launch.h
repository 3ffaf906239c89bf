// Kernel launches in the emulation build: what `kernel<<<grid, block, smem, stream>>>(args…)` does
// on a GPU, with the checks a GPU makes at launch (block and grid limits, dynamic shared memory
// against the kernel's limit, a live stream) plus one it cannot: every pointer argument must be
// device or pinned memory, so a host pointer handed to a kernel fails here rather than as garbage
// on the device. Errors are left for cudaGetLastError, as the launch check after each launch reads
// them.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "emulation/device_arena.h"
#include "emulation/grid.h"
#include "emulation/runtime_state.h"

namespace gattn::emu {

// A launch configuration error's text, or "" when the launch may run.
std::string check_launch_shape(const LaunchShape& shape, std::size_t max_dynamic_shared);

template <class P>
bool pointer_argument_ok(const P& value, int index, std::string& why) {
  if constexpr (std::is_pointer_v<P>) {
    if (value == nullptr || is_device_pointer(value) || find_pinned_allocation(value).bytes > 0) return true;
    char addr[32];
    std::snprintf(addr, sizeof addr, "%p", static_cast<const void*>(value));
    why = "kernel argument " + std::to_string(index) + " (" + addr + ") is a host pointer, not device memory";
    return false;
  } else {
    (void)value, (void)index, (void)why;
    return true;
  }
}

template <class... P, class... A>
void launch(void (*kernel)(P...), dim3 grid, dim3 block, std::size_t shared_bytes, cudaStream_t stream, A&&... args) {
  const LaunchShape shape{grid, block, shared_bytes};
  if (std::string why = check_launch_shape(shape, max_dynamic_shared(reinterpret_cast<const void*>(kernel)));
      !why.empty()) {
    fail(cudaErrorInvalidConfiguration, why);
    return;
  }
  if (!valid_stream(stream)) {
    fail(cudaErrorInvalidResourceHandle, "kernel launch on an invalid or destroyed stream");
    return;
  }
  queue_work(stream);
  // The arguments converted to the parameter types once, as the launch does; each thread copies them.
  using Params = std::tuple<std::decay_t<P>...>;
  Params params(std::forward<A>(args)...);
  std::string why;
  const bool pointers_ok = std::apply(
      [&](const auto&... p) {
        int i = 0;
        return (pointer_argument_ok(p, i++, why) && ...);
      },
      params);
  if (!pointers_ok) {
    fail(cudaErrorInvalidValue, why);
    return;
  }
  struct Closure {
    void (*kernel)(P...);
    Params* params;
  } closure{kernel, &params};
  auto thread_main = [](void* c) {
    auto* cl = static_cast<Closure*>(c);
    Params copy = *cl->params;  // a thread may modify its parameters
    std::apply(cl->kernel, copy);
  };
  DeviceAccess access;
  std::string error;
  if (run_grid(shape, thread_main, &closure, error) != cudaSuccess) fail(cudaErrorLaunchFailure, error);
}

}  // namespace gattn::emu
