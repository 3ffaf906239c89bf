// Gate kind `none`: the baseline causal attention (SPEC §4), no parameters.
#include "models/gates/gates.h"

namespace gattn::models {

Tensor NoGate::attend(const AttentionInputs& in, AttentionContext& ctx) {
  return merge_heads(run_attention(in, {}, ctx).out);
}

}  // namespace gattn::models
