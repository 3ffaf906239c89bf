// Gate kind `none`: the baseline causal attention (SPEC §4), no parameters.
#include "models/gates/gates.h"

namespace gattn::models {

Tensor NoGate::attend(const AttentionInputs& in, AttentionContext& ctx) {
  return merge_heads(run_attention(in, {}, ctx).out);
}


Tensor NoGate::attend_cached(const AttentionInputs& in, LayerKVCache& cache, std::int64_t pos) {
  return merge_heads(run_cached_attention(in, cache, pos));
}

}  // namespace gattn::models
