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
//
// Partial rotation (GPT-NeoX's rotary_pct, Qwen3-Next's partial_rotary_factor): with fraction < 1
// only the first rd = ⌊fraction·d⌋ elements of each row are rotated, exactly as above with rd in
// place of d (pairs (k, k + rd/2), θ_k = base^(−2k/rd)), and elements rd … d−1 pass through
// unchanged — Hugging Face's q_rot = q[..., :rd], q_pass = q[..., rd:]. rd must be even and > 0.
#pragma once
#include "core/tensor/tensor.h"

namespace gattn::ops {

inline constexpr double kRopeBase = 10000.0;  // RoFormer's and GPT-NeoX's frequency base

// fraction in (0, 1]: the share of each row that is rotated (1: all of it, the bits of a plain rope).
Tensor rope(const Tensor& x, const Tensor& positions, double base = kRopeBase, double fraction = 1.0);

// i32 [n] holding first, first+1, …, first+n−1 on `device`: the positions of n consecutive rows (what
// rope rotates them by, and the rows of a learned position table they take).
Tensor position_ids(std::int64_t first, std::int64_t n, Device device = Device::cpu);

}  // namespace gattn::ops
