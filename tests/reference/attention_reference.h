// The tests' name for the composed attention (ops/attention/composed_attention.h): the slow, obviously-correct
// attention built only from the primitive autograd ops, materialising the [B, H, T, T]
// scores and weights, that ops::flash_attention (outputs, statistics and every gradient) is checked
// against.
#pragma once
#include "ops/attention/composed_attention.h"

namespace gattn::test {

inline ops::AttentionResult reference_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                                const ops::AttentionTerms& terms = {},
                                                const ops::AttentionOptions& options = {}) {
  return ops::composed_attention(q, k, v, terms, options);
}

inline Tensor attention_hidden_mask(std::int64_t Tq, std::int64_t Tk, std::int64_t window, bool causal = true) {
  return ops::attention_hidden_mask(Tq, Tk, window, causal);
}

}  // namespace gattn::test
