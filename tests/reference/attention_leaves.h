// The leaves of one fused-attention test case — q, k, v and the logit and modulation terms, each
// undefined when the case lacks it — and the terms as ops::flash_attention takes them. Shared by the
// CPU attention tests (test_attention.cpp, test_attention_gqa.cpp), which make them their own way.
#pragma once
#include <limits>
#include <vector>

#include "core/tensor/random.h"
#include "ops/attention/attention.h"

namespace gattn::test {

struct AttentionLeaves {
  Tensor q, k, v, row_bias, col_bias, mod_row, mod_col, mod_alpha;
  double tau = 1.0;
  double hard_threshold = std::numeric_limits<double>::quiet_NaN();  // a hard modulation when finite
  bool softplus = false;                                             // G = softplus(u) instead of σ(u)
  double dropout = 0;  // the modulation dropout's p (with a dropout generator in terms())

  // `dropout_noise`: the dropout's random source (null: no dropout, whatever `dropout` says).
  ops::AttentionTerms terms(Generator* noise = nullptr, Generator* dropout_noise = nullptr) const {
    ops::AttentionTerms t;
    t.row_bias = row_bias;
    t.col_bias = col_bias;
    t.modulation_row = mod_row;
    t.modulation_col = mod_col;
    t.modulation_alpha = mod_alpha;
    t.modulation_temperature = tau;
    t.modulation_hard_threshold = hard_threshold;
    t.modulation_noise = noise;
    t.modulation_softplus = softplus;
    if (dropout_noise) {
      t.modulation_dropout = dropout;
      t.modulation_dropout_noise = dropout_noise;
    }
    return t;
  }
  // In the order of kAttentionLeafNames.
  std::vector<Tensor> leaves() const { return {q, k, v, row_bias, col_bias, mod_row, mod_col, mod_alpha}; }
  bool modulated() const { return mod_row.defined(); }
};

inline const char* const kAttentionLeafNames[] = {"q",        "k",       "v",       "row_bias",
                                                  "col_bias", "mod_row", "mod_col", "mod_alpha"};

}  // namespace gattn::test
