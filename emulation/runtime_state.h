// State the emulated CUDA runtime shares with the kernel launcher and the library shims: the last
// error (with a detail message for the errors only emulation finds), streams and their checks.
#pragma once
#include <cuda_runtime.h>

#include <string>

namespace gattn::emu {

// Records `e` as the thread's last error, `detail` as the text cudaGetErrorString gives for it,
// prints the detail on stderr (an emulation finding should be seen even where the caller drops the
// status), and returns e.
cudaError_t fail(cudaError_t e, const std::string& detail);

// Returns cudaErrorNotReady, left as the thread's last error like any status but not printed: a
// poll answering "not ready" is no finding.
cudaError_t not_ready();

// Marks work queued on stream `s` (null: the default stream): its next cudaStreamQuery answers
// cudaErrorNotReady unless the host synchronizes first (see cuda_runtime.cpp).
void queue_work(cudaStream_t s);

// Whether `s` is the default stream or a stream created and not yet destroyed.
bool valid_stream(cudaStream_t s);

// The dynamic shared memory a kernel may use (48 KiB unless raised by cudaFuncSetAttribute).
std::size_t max_dynamic_shared(const void* kernel);

}  // namespace gattn::emu
