// RAII CUDA streams and events, and the process's one compute stream. Plain C++ can include this
// (the handles are the runtime's opaque struct pointers, which .cu files pass on as cudaStream_t /
// cudaEvent_t); the definitions exist only in CUDA builds (GATTN_WITH_CUDA).
#pragma once

struct CUstream_st;
struct CUevent_st;

namespace gattn::cuda {

class Stream {
 public:
  // A new non-blocking stream: it does not serialise with the legacy default stream, so a later
  // copy stream can overlap with compute.
  Stream();
  ~Stream();
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  CUstream_st* handle() const { return handle_; }
  void synchronize() const;  // blocks the host until all work queued so far has finished

 private:
  CUstream_st* handle_ = nullptr;
};

// The stream every kernel, copy and allocation of this process is ordered on. Created on first use
// on the current device and never destroyed (tensors freed during static destruction still use it).
// Throws DeviceError without a device.
Stream& compute_stream();

class Event {
 public:
  // Timing events cost more to record; plain ones are for ordering and host waits.
  explicit Event(bool enable_timing = false);
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  CUevent_st* handle() const { return handle_; }
  void record(const Stream& stream);
  void synchronize() const;                          // blocks the host until the recorded work has finished
  bool query() const;                                // true when the recorded work has finished (or none was recorded)
  void block(const Stream& stream) const;            // later work on `stream` waits for this event, the host does not
  float elapsed_ms_since(const Event& start) const;  // both recorded with enable_timing

 private:
  CUevent_st* handle_ = nullptr;
};

}  // namespace gattn::cuda
