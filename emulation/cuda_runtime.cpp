// The CUDA runtime API calls gattn makes, over host memory (see device_arena.h). Work submitted to
// a stream runs at once on the calling thread, which is one valid order of the asynchronous
// semantics; what emulation adds is checking: copy directions and bounds against the allocations,
// stream and event handles, launch limits, and host access to device memory.
//
// Errors follow the runtime's per-thread model: every call that returns a status other than
// cudaSuccess also leaves it as the thread's last error, which cudaGetLastError returns and clears
// and cudaPeekAtLastError returns. That includes cudaErrorNotReady from a poll, so a caller that
// polls must clear it, or the next launch check (cudaGetLastError after a launch) reports it.
//
// Polls see work in flight although it has already run: work queued on a stream (a copy, a memset,
// a kernel, a collective, an event record) is pending until the host synchronizes with it or polls
// it once. The first cudaStreamQuery of a stream with pending work, and the first cudaEventQuery
// after a cudaEventRecord, answer cudaErrorNotReady; the next answers cudaSuccess (the work has
// finished by then). cudaStreamSynchronize finishes the stream's work and the events recorded on
// it, cudaEventSynchronize its event, cudaDeviceSynchronize everything. A GPU may answer either way
// to any single poll; this is the order that finds code that only works when the first answer is
// "ready".
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "emulation/device_arena.h"
#include "emulation/runtime_state.h"

struct CUstream_st {
  unsigned flags = 0;
  std::atomic<bool> pending{false};  // work queued and neither synchronized nor polled since
};

struct CUevent_st {
  unsigned flags = 0;
  bool recorded = false;
  std::atomic<bool> pending{false};  // recorded and neither synchronized nor polled since
  cudaStream_t stream = nullptr;     // where it was last recorded
  std::chrono::steady_clock::time_point at;
};

namespace gattn::emu {

namespace {

constexpr std::size_t kDefaultDynamicShared = 48u << 10;
constexpr int kMaxDynamicSharedOptin = 232448;  // H100/H200: 227 KiB per block

struct RuntimeState {
  std::mutex mu;
  std::set<cudaStream_t> streams;
  std::set<cudaEvent_t> events;
  std::map<const void*, int> max_dynamic_shared;  // kernel -> bytes
};

RuntimeState& state() {
  static auto* s = new RuntimeState;  // never destroyed: streams outlive static destructors
  return *s;
}

std::atomic<bool> g_default_stream_pending{false};  // the legacy default stream (handle null)

thread_local cudaError_t g_last_error = cudaSuccess;
thread_local cudaError_t g_detail_code = cudaSuccess;
thread_local std::string g_detail;
thread_local int g_device = 0;

// Forgets and deletes a stream or event handle; a handle that is not live is an error.
template <class Handle>
cudaError_t destroy_handle(std::set<Handle>& live, Handle h, const char* what);

bool valid_event(cudaEvent_t e) {
  RuntimeState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return e && s.events.count(e) > 0;
}

// Device count: one emulated GPU unless GATTN_EMU_DEVICES says otherwise (0 makes the build behave
// like a machine without a GPU).
int device_count() {
  const char* v = std::getenv("GATTN_EMU_DEVICES");
  return v && *v ? std::atoi(v) : 1;
}

const char* kind_name(cudaMemcpyKind k) {
  switch (k) {
    case cudaMemcpyHostToHost:
      return "HostToHost";
    case cudaMemcpyHostToDevice:
      return "HostToDevice";
    case cudaMemcpyDeviceToHost:
      return "DeviceToHost";
    case cudaMemcpyDeviceToDevice:
      return "DeviceToDevice";
    default:
      return "Default";
  }
}

// Checks one side of a copy: device memory where the kind says device, host memory elsewhere.
bool check_side(const void* p, std::size_t bytes, bool device_side, const char* side, cudaMemcpyKind kind,
                const char* call, std::string& why) {
  if (bytes == 0) return true;
  if (device_side) {
    std::string reason;
    if (!device_accessible_range(p, bytes, reason)) {
      why = std::string(call) + " (" + kind_name(kind) + "): the " + side + " " + reason;
      return false;
    }
    return true;
  }
  if (is_device_pointer(p)) {
    char addr[32];
    std::snprintf(addr, sizeof addr, "%p", p);
    why = std::string(call) + " (" + kind_name(kind) + "): the " + side + " " + addr +
          " is device memory where the copy's kind says host";
    return false;
  }
  return true;
}

cudaError_t check_copy(void* dst, const void* src, std::size_t dst_bytes, std::size_t src_bytes, cudaMemcpyKind kind,
                       cudaStream_t stream, const char* call) {
  if (!valid_stream(stream))
    return fail(cudaErrorInvalidResourceHandle, std::string(call) + ": invalid or destroyed stream");
  if (kind == cudaMemcpyDefault) {
    const bool dd = is_device_pointer(dst), sd = is_device_pointer(src);
    kind = dd ? (sd ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
              : (sd ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
  }
  const bool dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  const bool src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  std::string why;
  if (!check_side(dst, dst_bytes, dst_dev, "destination", kind, call, why) ||
      !check_side(src, src_bytes, src_dev, "source", kind, call, why))
    return fail(cudaErrorInvalidValue, why);
  return cudaSuccess;
}

template <class Handle>
cudaError_t destroy_handle(std::set<Handle>& live, Handle h, const char* what) {
  {
    std::lock_guard<std::mutex> lock(state().mu);
    if (!h || live.erase(h) == 0) return fail(cudaErrorInvalidResourceHandle, what);
  }
  delete h;
  return cudaSuccess;
}

}  // namespace

cudaError_t fail(cudaError_t e, const std::string& detail) {
  g_last_error = e;
  g_detail_code = e;
  g_detail = detail;
  std::fprintf(stderr, "gattn CUDA emulation: %s\n", detail.c_str());
  return e;
}

cudaError_t not_ready() {
  g_last_error = cudaErrorNotReady;  // a status like any other: the thread's last error until cleared
  return cudaErrorNotReady;
}

void queue_work(cudaStream_t s) { (s ? s->pending : g_default_stream_pending).store(true); }

bool valid_stream(cudaStream_t s) {
  if (s == nullptr) return true;
  RuntimeState& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  return st.streams.count(s) > 0;
}

std::size_t max_dynamic_shared(const void* kernel) {
  RuntimeState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.max_dynamic_shared.find(kernel);
  return it == s.max_dynamic_shared.end() ? kDefaultDynamicShared : static_cast<std::size_t>(it->second);
}

}  // namespace gattn::emu

using gattn::emu::fail;

// ---- devices ----

cudaError_t cudaGetDeviceCount(int* count) {
  *count = gattn::emu::device_count();
  if (*count <= 0) return fail(cudaErrorNoDevice, "GATTN_EMU_DEVICES=0: no emulated device");
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  *device = gattn::emu::g_device;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= gattn::emu::device_count())
    return fail(cudaErrorInvalidDevice, "cudaSetDevice(" + std::to_string(device) + "): no such emulated device");
  gattn::emu::g_device = device;
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize() {
  auto& st = gattn::emu::state();
  std::lock_guard<std::mutex> lock(st.mu);
  gattn::emu::g_default_stream_pending = false;
  for (cudaStream_t s : st.streams) s->pending = false;
  for (cudaEvent_t e : st.events) e->pending = false;
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int* v) {
  *v = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* v) {
  *v = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (device < 0 || device >= gattn::emu::device_count())
    return fail(cudaErrorInvalidDevice, "cudaDeviceGetAttribute: no such device");
  switch (attr) {
    case cudaDevAttrMaxPitch: {
      // GATTN_EMU_MAX_PITCH lowers the limit so the fallbacks for wide rows run at test sizes.
      const char* v = std::getenv("GATTN_EMU_MAX_PITCH");
      *value = v && *v ? std::atoi(v) : 2147483647;
      return cudaSuccess;
    }
    case cudaDevAttrMaxThreadsPerBlock:
      *value = 1024;
      return cudaSuccess;
    case cudaDevAttrWarpSize:
      *value = 32;
      return cudaSuccess;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin:
      *value = gattn::emu::kMaxDynamicSharedOptin;
      return cudaSuccess;
    case cudaDevAttrMultiProcessorCount:
      *value = 132;
      return cudaSuccess;
    case cudaDevAttrComputeCapabilityMajor:
      *value = 9;
      return cudaSuccess;
    case cudaDevAttrComputeCapabilityMinor:
      *value = 0;
      return cudaSuccess;
    default:
      return fail(cudaErrorInvalidValue,
                  "cudaDeviceGetAttribute: attribute " + std::to_string(static_cast<int>(attr)) + " is not emulated");
  }
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  *total = gattn::emu::device_capacity();
  *free_bytes = *total - gattn::emu::device_bytes_in_use();
  return cudaSuccess;
}

// ---- errors ----

cudaError_t cudaGetLastError() {
  const cudaError_t e = gattn::emu::g_last_error;
  gattn::emu::g_last_error = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError() { return gattn::emu::g_last_error; }

const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess:
      return "cudaSuccess";
    case cudaErrorInvalidValue:
      return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation:
      return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration:
      return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidPitchValue:
      return "cudaErrorInvalidPitchValue";
    case cudaErrorInvalidDevice:
      return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle:
      return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady:
      return "cudaErrorNotReady";
    case cudaErrorNoDevice:
      return "cudaErrorNoDevice";
    case cudaErrorLaunchFailure:
      return "cudaErrorLaunchFailure";
    case cudaErrorInvalidDevicePointer:
      return "cudaErrorInvalidDevicePointer";
    default:
      return "cudaErrorUnknown";
  }
}

const char* cudaGetErrorString(cudaError_t e) {
  // An error emulation found carries its detail (which pointer, which block) to the CudaError.
  if (e != cudaSuccess && e == gattn::emu::g_detail_code && !gattn::emu::g_detail.empty())
    return gattn::emu::g_detail.c_str();
  switch (e) {
    case cudaSuccess:
      return "no error";
    case cudaErrorInvalidValue:
      return "invalid argument";
    case cudaErrorMemoryAllocation:
      return "out of memory";
    case cudaErrorInvalidConfiguration:
      return "invalid configuration argument";
    case cudaErrorNoDevice:
      return "no CUDA-capable device is detected";
    case cudaErrorLaunchFailure:
      return "unspecified launch failure";
    default:
      return cudaGetErrorName(e);
  }
}

// ---- memory ----

cudaError_t cudaMalloc(void** p, size_t bytes) {
  *p = gattn::emu::device_malloc(bytes);
  if (!*p) {
    gattn::emu::g_last_error = cudaErrorMemoryAllocation;
    return cudaErrorMemoryAllocation;  // not an emulation finding: no detail, no message
  }
  // A GPU hands out whatever the memory held; NaN bytes make a read before the first write show.
  gattn::emu::DeviceAccess access;
  std::memset(*p, 0xff, bytes);
  return cudaSuccess;
}

cudaError_t cudaFree(void* p) {
  if (!p) return cudaSuccess;
  if (!gattn::emu::device_free(p))
    return fail(cudaErrorInvalidDevicePointer, "cudaFree: pointer is not a device allocation's start");
  return cudaSuccess;
}

cudaError_t cudaHostAlloc(void** p, size_t bytes, unsigned int) {
  *p = gattn::emu::pinned_malloc(bytes);
  if (!*p) return cudaErrorMemoryAllocation;
  return cudaSuccess;
}

cudaError_t cudaMallocHost(void** p, size_t bytes) { return cudaHostAlloc(p, bytes, 0); }

cudaError_t cudaFreeHost(void* p) {
  if (!p) return cudaSuccess;
  if (!gattn::emu::pinned_free(p))
    return fail(cudaErrorInvalidValue, "cudaFreeHost: pointer is not a pinned allocation");
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream) {
  if (const cudaError_t e = gattn::emu::check_copy(dst, src, count, count, kind, stream, "cudaMemcpyAsync");
      e != cudaSuccess)
    return e;
  gattn::emu::queue_work(stream);
  gattn::emu::DeviceAccess access;
  if (count) std::memmove(dst, src, count);
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  const cudaError_t e = cudaMemcpyAsync(dst, src, count, kind, nullptr);
  if (e == cudaSuccess) gattn::emu::g_default_stream_pending = false;  // returns when the copy has finished
  return e;
}

cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind kind, cudaStream_t stream) {
  int max_pitch = 0;
  cudaDeviceGetAttribute(&max_pitch, cudaDevAttrMaxPitch, gattn::emu::g_device);
  if (width > dpitch || width > spitch) return fail(cudaErrorInvalidValue, "cudaMemcpy2DAsync: width exceeds a pitch");
  if (dpitch > static_cast<size_t>(max_pitch) || spitch > static_cast<size_t>(max_pitch))
    return fail(cudaErrorInvalidPitchValue, "cudaMemcpy2DAsync: pitch " + std::to_string(std::max(dpitch, spitch)) +
                                                " exceeds the device's maximum pitch " + std::to_string(max_pitch));
  if (height == 0 || width == 0) return cudaSuccess;
  const size_t dst_span = dpitch * (height - 1) + width, src_span = spitch * (height - 1) + width;
  if (const cudaError_t e = gattn::emu::check_copy(dst, src, dst_span, src_span, kind, stream, "cudaMemcpy2DAsync");
      e != cudaSuccess)
    return e;
  gattn::emu::queue_work(stream);
  gattn::emu::DeviceAccess access;
  for (size_t r = 0; r < height; ++r)
    std::memmove(static_cast<char*>(dst) + r * dpitch, static_cast<const char*>(src) + r * spitch, width);
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* p, int value, size_t count, cudaStream_t stream) {
  if (!gattn::emu::valid_stream(stream))
    return fail(cudaErrorInvalidResourceHandle, "cudaMemsetAsync: invalid or destroyed stream");
  std::string why;
  if (count && !gattn::emu::device_accessible_range(p, count, why))
    return fail(cudaErrorInvalidValue, "cudaMemsetAsync: " + why);
  gattn::emu::queue_work(stream);
  gattn::emu::DeviceAccess access;
  if (count) std::memset(p, value, count);
  return cudaSuccess;
}

// ---- streams and events ----

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int flags) {
  auto* stream = new CUstream_st{flags};
  auto& st = gattn::emu::state();
  std::lock_guard<std::mutex> lock(st.mu);
  st.streams.insert(stream);
  *s = stream;
  return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t* s) { return cudaStreamCreateWithFlags(s, 0); }

cudaError_t cudaStreamDestroy(cudaStream_t s) {
  return gattn::emu::destroy_handle(gattn::emu::state().streams, s, "cudaStreamDestroy: not a live stream");
}

cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  if (!gattn::emu::valid_stream(s))
    return fail(cudaErrorInvalidResourceHandle, "cudaStreamSynchronize: invalid or destroyed stream");
  (s ? s->pending : gattn::emu::g_default_stream_pending) = false;
  auto& st = gattn::emu::state();
  std::lock_guard<std::mutex> lock(st.mu);
  for (cudaEvent_t e : st.events)
    if (e->stream == s) e->pending = false;
  return cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t s) {
  if (!gattn::emu::valid_stream(s))
    return fail(cudaErrorInvalidResourceHandle, "cudaStreamQuery: invalid or destroyed stream");
  if ((s ? s->pending : gattn::emu::g_default_stream_pending).exchange(false)) return gattn::emu::not_ready();
  return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int) {
  if (!gattn::emu::valid_stream(s) || !gattn::emu::valid_event(e))
    return fail(cudaErrorInvalidResourceHandle, "cudaStreamWaitEvent: invalid stream or event");
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int flags) {
  auto* event = new CUevent_st;
  event->flags = flags;
  auto& st = gattn::emu::state();
  std::lock_guard<std::mutex> lock(st.mu);
  st.events.insert(event);
  *e = event;
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* e) { return cudaEventCreateWithFlags(e, cudaEventDefault); }

cudaError_t cudaEventDestroy(cudaEvent_t e) {
  return gattn::emu::destroy_handle(gattn::emu::state().events, e, "cudaEventDestroy: not a live event");
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  if (!gattn::emu::valid_event(e) || !gattn::emu::valid_stream(s))
    return fail(cudaErrorInvalidResourceHandle, "cudaEventRecord: invalid event or stream");
  e->recorded = true;
  e->stream = s;
  e->pending = true;
  gattn::emu::queue_work(s);
  e->at = std::chrono::steady_clock::now();
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  if (!gattn::emu::valid_event(e))
    return fail(cudaErrorInvalidResourceHandle, "cudaEventSynchronize: not a live event");
  e->pending = false;
  return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t e) {
  if (!gattn::emu::valid_event(e)) return fail(cudaErrorInvalidResourceHandle, "cudaEventQuery: not a live event");
  if (e->pending.exchange(false)) return gattn::emu::not_ready();
  return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (!gattn::emu::valid_event(start) || !gattn::emu::valid_event(end))
    return fail(cudaErrorInvalidResourceHandle, "cudaEventElapsedTime: not a live event");
  if ((start->flags | end->flags) & cudaEventDisableTiming)
    return fail(cudaErrorInvalidResourceHandle,
                "cudaEventElapsedTime: an event was created with cudaEventDisableTiming");
  if (!start->recorded || !end->recorded)
    return fail(cudaErrorInvalidResourceHandle, "cudaEventElapsedTime: an event was never recorded");
  *ms = std::chrono::duration<float, std::milli>(end->at - start->at).count();
  return cudaSuccess;
}

// ---- kernels ----

cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value) {
  if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize) return cudaSuccess;  // hints: nothing to emulate
  if (value < 0 || value > gattn::emu::kMaxDynamicSharedOptin)
    return fail(cudaErrorInvalidValue, "cudaFuncSetAttribute: " + std::to_string(value) +
                                           " bytes of dynamic shared memory exceed the device's 232448");
  auto& st = gattn::emu::state();
  std::lock_guard<std::mutex> lock(st.mu);
  st.max_dynamic_shared[func] = value;
  return cudaSuccess;
}
