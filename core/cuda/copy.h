// Byte copies between host and device memory, and device memsets, ordered on the compute stream.
// The tensor core's only way to move data across devices (Tensor::to(Device), clone, copy_from).
#pragma once
#include <cstddef>

#include "core/tensor/dtype.h"

namespace gattn::cuda {

// Copies `bytes` from `src` on `src_device` to `dst` on `dst_device`. When the destination is the
// host, returns after the data has arrived (the compute stream is synchronised); when it is the
// device, returns once the source may be reused: pageable host memory is staged by the driver
// before the call returns (pinned buffers, which are not, go through PinnedBuffer instead).
// Throws DeviceError when a CUDA side is involved without a device.
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes);
// Sets `bytes` of device memory to zero (asynchronous on the compute stream).
void zero_device_bytes(void* dst, std::size_t bytes);
}  // namespace gattn::cuda
