// Rotary position embedding (RoFormer, Su et al. 2021), in the GPT-NeoX / Llama "rotate half"
// layout (autograd-aware). x is [..., T, d] with d even; positions is i32 [T], the absolute
// position p_t of row t (any value, negative too: rotating by −s undoes a rotation by s). With
// h = d/2, for every leading index, row t and pair k < h:
//   θ_k = base^(−2k/d),  a = p_t·θ_k  (in double, so large positions keep their precision)
//   y[t, k]     = x[t, k] cos a − x[t, k+h] sin a
//   y[t, k+h]   = x[t, k+h] cos a + x[t, k] sin a
// i.e. the pair (x[k], x[k+h]) is rotated by the angle a. The rotation is orthogonal, so the
// backward is the rotation by −a: dx[k] = g[k] cos a + g[k+h] sin a, dx[k+h] = g[k+h] cos a − g[k] sin a.
// Rotated q_i and k_j give q_i·k_j that depends on p_i − p_j only, which lets a KV cache keep keys
// rotated at their own positions. f32 and f64 on the CPU and on CUDA (positions on x's device).
#pragma once
#include "core/tensor/tensor.h"

namespace gattn::ops {

inline constexpr double kRopeBase = 10000.0;  // RoFormer's and GPT-NeoX's frequency base

Tensor rope(const Tensor& x, const Tensor& positions, double base = kRopeBase);

// i32 [n] holding first, first+1, …, first+n−1 on `device`: the positions of n consecutive rows (what
// rope rotates them by, and the rows of a learned position table they take).
Tensor position_ids(std::int64_t first, std::int64_t n, Device device = Device::cpu);

}  // namespace gattn::ops
