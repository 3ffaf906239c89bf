// The optimizer's multi-tensor kernels behind one dispatching op each: the AdamW update of many
// parameters at once, and the deterministic sum of squares that global-norm clipping needs. CPU
// tensors go to ops/cpu/adamw.h (one parallel region for all of them), CUDA tensors to
// ops/cuda/adamw.h (one multi-tensor launch); the two compute the same update element for element.
// No autograd: these change parameters and moments in place.
#pragma once
#include <vector>

#include "core/tensor/tensor.h"
#include "ops/adamw_element.h"

namespace gattn::ops {

// One parameter's AdamW update of this step: its tensors (one shape, one dtype and device) and its
// own coefficients (ops/adamw_element.h).
struct AdamWParam {
  Tensor param, grad, exp_avg, exp_avg_sq;
  adamw::ParamCoeffs coeffs;
};

// Updates every listed parameter and its moments in place: f32 and f64 CPU tensors, f32 CUDA
// tensors. Every operation rounds once (no fused multiply-adds), on both devices. Throws
// DTypeError / ShapeError when a parameter's tensors do not agree.
void adamw_update_(const std::vector<AdamWParam>& params, const adamw::Settings& settings);

// Σ g² over every element of every tensor, accumulated in double in an order fixed by the shapes
// alone (fixed-size blocks, added in list order), so the sum has the same bits for any thread
// count. CUDA tensors are reduced on the device and read back once.
double sum_of_squares(const std::vector<Tensor>& tensors);

}  // namespace gattn::ops
