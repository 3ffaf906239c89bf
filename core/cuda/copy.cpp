// Host/device copies on the compute stream (CUDA builds only; see copy.h).
#ifdef GATTN_WITH_CUDA
#include "core/cuda/copy.h"

#include <cuda_runtime.h>

#include <cstring>

#include "core/cuda/device.h"
#include "core/cuda/error.h"
#include "core/cuda/stream.h"

namespace gattn::cuda {

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes) {
  if (dst_device == Device::cpu && src_device == Device::cpu) {
    if (bytes) std::memcpy(dst, src, bytes);
    return;
  }
  require_device("copy_bytes");
  if (bytes == 0) return;
  const Stream& stream = compute_stream();
  if (dst_device == Device::cuda && src_device == Device::cpu) {
    GATTN_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream.handle()));
  } else if (dst_device == Device::cpu) {
    GATTN_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream.handle()));
    stream.synchronize();  // the host reads dst as soon as we return
  } else {
    GATTN_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream.handle()));
  }
}

void zero_device_bytes(void* dst, std::size_t bytes) {
  require_device("zero_device_bytes");
  if (bytes == 0) return;
  GATTN_CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, compute_stream().handle()));
}

}  // namespace gattn::cuda
#endif
