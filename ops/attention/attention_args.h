// The argument checks of the fused attention, one function for both backends (ops/attention/attention.cpp on
// the CPU, ops/attention/cuda_attention.cpp on CUDA): shapes, the window, the active rows and the terms are
// checked the same way; only the element types each backend takes differ.
#pragma once
#include <vector>

#include "core/tensor/dtype.h"
#include "ops/attention/attention.h"

namespace gattn::ops {

struct AttentionDTypes {
  bool (*allowed)(DType);  // the element types q, k, v (and the terms) may have
  const char* words;       // them in words, for messages: "f32 or f64"
  bool terms_match_q;      // the terms must have q's dtype (the CPU kernels read them as q's type)
};

// Throws DTypeError / ShapeError / ValueError naming "flash_attention" and the argument.
void check_attention_args(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionTerms& terms,
                          const AttentionOptions& options, const AttentionDTypes& dtypes);

// The op's autograd inputs in the order both backends record them: q, k, v, row_bias, col_bias,
// modulation_row, modulation_col, modulation_alpha (undefined without a modulation). The backward's
// `needs` flags and the gradients it returns follow this order.
std::vector<Tensor> attention_inputs(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionTerms& terms);

// The backward's `needs` flags by name: which of attention_inputs() want a gradient.
struct AttentionNeeds {
  bool q = false, k = false, v = false;
  bool row_bias = false, col_bias = false;
  bool modulation_row = false, modulation_col = false, modulation_alpha = false;
};
AttentionNeeds attention_needs(const std::vector<bool>& needs);

}  // namespace gattn::ops
