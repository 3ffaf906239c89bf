// Stream and Event over the CUDA runtime (CUDA builds only; see stream.h).
#ifdef GATTN_WITH_CUDA
#include "core/cuda/stream.h"

#include <cuda_runtime.h>

#include <utility>

#include "core/cuda/device.h"
#include "core/cuda/error.h"

namespace gattn::cuda {

Stream::Stream() {
  require_device("cuda::Stream");
  GATTN_CUDA_CHECK(cudaStreamCreateWithFlags(&handle_, cudaStreamNonBlocking));
}

Stream::~Stream() {
  if (handle_) cudaStreamDestroy(handle_);  // no check: a destructor must not throw
}

Stream::Stream(Stream&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    if (handle_) cudaStreamDestroy(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

void Stream::synchronize() const { GATTN_CUDA_CHECK(cudaStreamSynchronize(handle_)); }

Stream& compute_stream() {
  // Leaked on purpose: see stream.h. Thread-safe by the static-local rule.
  static Stream* stream = new Stream();
  return *stream;
}

Event::Event(bool enable_timing) {
  require_device("cuda::Event");
  GATTN_CUDA_CHECK(cudaEventCreateWithFlags(&handle_, enable_timing ? cudaEventDefault : cudaEventDisableTiming));
}

Event::~Event() {
  if (handle_) cudaEventDestroy(handle_);
}

Event::Event(Event&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    if (handle_) cudaEventDestroy(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

void Event::record(const Stream& stream) { GATTN_CUDA_CHECK(cudaEventRecord(handle_, stream.handle())); }

void Event::synchronize() const { GATTN_CUDA_CHECK(cudaEventSynchronize(handle_)); }

bool Event::query() const {
  const cudaError_t e = cudaEventQuery(handle_);
  if (e == cudaErrorNotReady) {
    // "Not ready" is an answer, not a failure, but the runtime keeps it as the thread's last error
    // all the same: cleared here (as PyTorch's event query does), or the launch check after the next
    // kernel, which reads cudaGetLastError, would throw it.
    cudaGetLastError();
    return false;
  }
  GATTN_CUDA_CHECK(e);
  return true;
}

void Event::block(const Stream& stream) const { GATTN_CUDA_CHECK(cudaStreamWaitEvent(stream.handle(), handle_, 0)); }

float Event::elapsed_ms_since(const Event& start) const {
  float ms = 0;
  GATTN_CUDA_CHECK(cudaEventElapsedTime(&ms, start.handle_, handle_));
  return ms;
}

}  // namespace gattn::cuda
#endif
