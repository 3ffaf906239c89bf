// Sums of two gradients of one tensor, for the backward engine: where a value feeds several ops,
// and where a leaf's .grad accumulates. The tensor core's own elementwise add (a loop on the host,
// core/cuda/device_elements.h on the device), so autograd needs nothing from ops/.
#pragma once
#include "core/tensor/tensor.h"

namespace gattn::autograd {

// a + b as a new tensor. Both must have one shape, one floating dtype (f32 or f64) and one device;
// otherwise ShapeError, DTypeError or DeviceError naming `what`.
Tensor sum_gradients(const Tensor& a, const Tensor& b, const char* what);
// acc += g in place, under the same rules.
void add_gradient_into(Tensor& acc, const Tensor& g, const char* what);

}  // namespace gattn::autograd
