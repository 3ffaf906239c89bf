// Whether this process can use a CUDA device: the one check every CUDA entry point makes first,
// so a CPU-only build or a machine without a GPU gets a clear DeviceError instead of a crash.
#pragma once

namespace gattn::cuda {

// True when the build has CUDA and the driver reports at least one device (answer cached).
bool available();
// Throws DeviceError "<what>: this build has no CUDA" or "<what>: no CUDA device".
void require_device(const char* what);

}  // namespace gattn::cuda
