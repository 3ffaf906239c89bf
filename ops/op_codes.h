// The operation codes the CPU and CUDA dispatch share: one enum per family, so a kernel is chosen by
// the same value on both sides (a copy per side, cast through int, would run the wrong kernel the
// day one list is reordered). Plain C++, no CUDA headers: the .cu files include it too.
#pragma once

namespace gattn::ops {

enum class BinaryOp : int { add, sub, mul, div };
enum class UnaryOp : int { exp, log, tanh, sigmoid, log_sigmoid, relu, gelu, square, sqrt, heaviside };

}  // namespace gattn::ops
