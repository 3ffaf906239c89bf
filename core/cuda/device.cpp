// Device presence (see device.h). The one place the CPU-only build and the CUDA build differ in logic
// rather than in stubs: a CPU-only build simply has no devices.
#include "core/cuda/device.h"

#include <string>

#include "core/tensor/error.h"
#ifdef GATTN_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace gattn::cuda {

namespace {
int count_devices() {
#ifdef GATTN_WITH_CUDA
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the "no device / no driver" error so it is not reported later
    return 0;
  }
  return n;
#else
  return 0;
#endif
}
}  // namespace

bool available() { return device_count() > 0; }

void require_device(const char* what) {
#ifndef GATTN_WITH_CUDA
  throw DeviceError(std::string(what) + ": this build has no CUDA");
#else
  if (!available()) throw DeviceError(std::string(what) + ": no CUDA device");
#endif
}

int device_count() {
  static const int n = count_devices();
  return n;
}

void use_device(int ordinal) {
  require_device("use_device");
  if (ordinal < 0 || ordinal >= device_count())
    throw DeviceError("use_device: device " + std::to_string(ordinal) + " does not exist (" +
                      std::to_string(device_count()) + " visible)");
#ifdef GATTN_WITH_CUDA
  const cudaError_t status = cudaSetDevice(ordinal);
  if (status != cudaSuccess) {
    cudaGetLastError();  // reported here: the next launch check must not report it again
    throw DeviceError("use_device: cudaSetDevice(" + std::to_string(ordinal) +
                      ") failed: " + cudaGetErrorString(status));
  }
#endif
}

}  // namespace gattn::cuda
