// The tensor core's own element kernels on the device: dtype conversion and fill (Tensor::to,
// copy_from, fill) and the sum of two gradients (the backward engine). They live here, below the
// ops, so the tensor core never calls up into ops/cuda; the ops' kernels are in ops/cuda/.
#pragma once
#include <cstddef>

#include "core/tensor/dtype.h"

namespace gattn::cuda {

// Converts n elements of device memory from src_type to dst_type on the compute stream (bf16 with
// round-to-nearest-even, as on the host). Throws DeviceError without a device.
void convert_device_elements(void* dst, DType dst_type, const void* src, DType src_type, std::size_t n);
// Sets n elements of device memory of type `type` to `value` (converted as Tensor::fill converts it
// on the host) with a kernel on the compute stream: nothing is staged through the host.
void fill_device_elements(void* dst, DType type, double value, std::size_t n);
// dst[i] = a[i] + b[i] for n elements of `type` (f32 or f64; dst may be a or b) on the compute
// stream, one rounding per element as on the host. Throws DeviceError without a device.
void add_device_elements(void* dst, const void* a, const void* b, DType type, std::size_t n);

}  // namespace gattn::cuda
