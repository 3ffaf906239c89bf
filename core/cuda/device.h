// Whether this process can use a CUDA device: the one check every CUDA entry point makes first,
// so a CPU-only build or a machine without a GPU gets a clear DeviceError instead of a crash.
#pragma once

namespace gattn::cuda {

// True when the build has CUDA and the driver reports at least one device (answer cached).
bool available();
// Throws DeviceError "<what>: this build has no CUDA" or "<what>: no CUDA device".
void require_device(const char* what);
// How many devices the driver reports (0 without CUDA or without a device).
int device_count();
// Makes device `ordinal` this process's device for all later CUDA work (allocations, streams,
// kernels, cuBLAS): call it before any of that, as a data-parallel rank picks the GPU of its local
// rank. Throws DeviceError without a device or for an ordinal outside [0, device_count()).
void use_device(int ordinal);

}  // namespace gattn::cuda
