// gattn parameters → transformers tensors, the import's table read backwards (docs/export.md): GPT-2's
// Conv1D weights transposed, gattn's fused qkv split into q_proj, k_proj and v_proj, the output gate's
// rows put back between each head's query rows in Qwen3-Next's q_proj. Every value is copied; only
// the norm weights change, and only where the class's norms are zero-centred and the model's are
// not (or the other way round). Every parameter must be used, so nothing is dropped silently.
#include <map>
#include <set>

#include "core/tensor/error.h"
#include "models/hf/hf_export.h"
#include "models/hf/hf_layout.h"

namespace gattn::models {

namespace {

using Named = std::vector<std::pair<std::string, Tensor>>;
using hf_layout::rows;
using hf_layout::stacked;
using hf_layout::transposed;

// The model's parameters by name, taken with the shape the target's config implies.
class Params {
 public:
  explicit Params(const Named& params) {
    for (const auto& [name, t] : params) by_name_.emplace(name, t);
  }

  Tensor take(const std::string& name, const Shape& shape) {
    auto it = by_name_.find(name);
    if (it == by_name_.end())
      throw ValueError("export: the model has no parameter '" + name + "' (its weights and config disagree)");
    if (it->second.shape() != shape)
      throw ValueError("export: parameter '" + name + "' has shape " + shape_str(it->second.shape()) +
                       ", but the model's config implies " + shape_str(shape));
    used_.insert(name);
    return it->second.to(DType::f32);
  }

  void check_all_used() const {
    for (const auto& [name, t] : by_name_)
      if (!used_.count(name))
        throw ValueError("export: parameter '" + name +
                         "' has no place in the exported model (this build's model "
                         "and the export's name table disagree)");
  }

 private:
  std::map<std::string, Tensor> by_name_;
  std::set<std::string> used_;
};

// A norm weight as the class stores it: w where both apply w (or both 1 + w); 1 + w where gattn's
// model applies 1 + w and the class w (the same f32 factor gattn computes, so exact); w − 1 where
// the class applies 1 + w to gattn's plain w (exact for w in [0.5, 2], Sterbenz; elsewhere 1 + (w − 1)
// can differ from w by half an ulp of 1, 2⁻²⁴).
Tensor norm_weight(const Tensor& w, const HfTarget& t) {
  if (t.zero_centred_norms == t.config.norm_offset) return w;
  Tensor out = Tensor::empty(w.shape(), DType::f32);
  const float* src = w.data<float>();
  float* dst = out.data<float>();
  const float shift = t.zero_centred_norms ? -1.0f : 1.0f;
  for (std::int64_t i = 0; i < w.numel(); ++i) dst[i] = src[i] + shift;
  return out;
}

void head(Params& p, const HfTarget& t, Named& out) {
  const ModelConfig& c = t.config;
  // A tied head is the embedding, which save_pretrained does not store twice.
  if (!c.tie_embeddings) out.emplace_back("lm_head.weight", p.take("lm_head.weight", {c.vocab_size, c.n_embd}));
}

Named gpt2(Params& p, const HfTarget& t) {
  const ModelConfig& c = t.config;
  const std::int64_t C = c.n_embd, I = c.mlp_width();
  Named out;
  out.emplace_back("transformer.wte.weight", p.take("wte.weight", {c.vocab_size, C}));
  out.emplace_back("transformer.wpe.weight", p.take("wpe.weight", {c.block_size, C}));
  for (std::int64_t i = 0; i < c.n_layer; ++i) {
    const std::string h = "transformer.h." + std::to_string(i) + ".", b = "blocks." + std::to_string(i) + ".";
    out.emplace_back(h + "ln_1.weight", p.take(b + "ln1.weight", {C}));
    out.emplace_back(h + "ln_1.bias", p.take(b + "ln1.bias", {C}));
    // Conv1D stores [in, out]; c_attn's columns are q | k | v, as gattn's qkv rows.
    out.emplace_back(h + "attn.c_attn.weight", transposed(p.take(b + "attn.qkv.weight", {3 * C, C})));
    out.emplace_back(h + "attn.c_attn.bias", p.take(b + "attn.qkv.bias", {3 * C}));
    out.emplace_back(h + "attn.c_proj.weight", transposed(p.take(b + "attn.proj.weight", {C, C})));
    out.emplace_back(h + "attn.c_proj.bias", p.take(b + "attn.proj.bias", {C}));
    out.emplace_back(h + "ln_2.weight", p.take(b + "ln2.weight", {C}));
    out.emplace_back(h + "ln_2.bias", p.take(b + "ln2.bias", {C}));
    out.emplace_back(h + "mlp.c_fc.weight", transposed(p.take(b + "mlp.fc.weight", {I, C})));
    out.emplace_back(h + "mlp.c_fc.bias", p.take(b + "mlp.fc.bias", {I}));
    out.emplace_back(h + "mlp.c_proj.weight", transposed(p.take(b + "mlp.proj.weight", {C, I})));
    out.emplace_back(h + "mlp.c_proj.bias", p.take(b + "mlp.proj.bias", {C}));
  }
  out.emplace_back("transformer.ln_f.weight", p.take("ln_f.weight", {C}));
  out.emplace_back("transformer.ln_f.bias", p.take("ln_f.bias", {C}));
  head(p, t, out);
  return out;
}

// Qwen3-Next's q_proj: per head n, its d query rows, then its d gate rows (transformers views the
// output per head as [query | gate] and chunks it). A gate with one row per head gives that row d times.
Tensor query_and_gate(const Tensor& q, const Tensor& gate, const HfTarget& t) {
  const std::int64_t H = t.config.n_head, d = t.config.head_dim();
  std::vector<Tensor> parts;
  for (std::int64_t n = 0; n < H; ++n) {
    parts.push_back(rows(q, n * d, d));
    if (t.gate_per_head) {
      const Tensor row = rows(gate, n, 1);
      for (std::int64_t j = 0; j < d; ++j) parts.push_back(row);
    } else {
      parts.push_back(rows(gate, n * d, d));
    }
  }
  return stacked(parts);
}

Named llama(Params& p, const HfTarget& t) {
  const ModelConfig& c = t.config;
  const std::int64_t C = c.n_embd, H = c.n_head, K = c.kv_heads(), d = c.head_dim(), I = c.mlp_width();
  Named out;
  out.emplace_back("model.embed_tokens.weight", p.take("wte.weight", {c.vocab_size, C}));
  for (std::int64_t i = 0; i < c.n_layer; ++i) {
    const std::string h = "model.layers." + std::to_string(i) + ".", b = "blocks." + std::to_string(i) + ".";
    out.emplace_back(h + "input_layernorm.weight", norm_weight(p.take(b + "ln1.weight", {C}), t));
    // gattn's qkv rows: the H query heads, the K key heads, the K value heads.
    const Tensor qkv = p.take(b + "attn.qkv.weight", {(H + 2 * K) * d, C});
    const Tensor q = rows(qkv, 0, H * d);
    if (t.output_gate)
      out.emplace_back(h + "self_attn.q_proj.weight",
                       query_and_gate(q, p.take(b + "attn.gate.weight", {t.gate_per_head ? H : H * d, C}), t));
    else
      out.emplace_back(h + "self_attn.q_proj.weight", q);
    out.emplace_back(h + "self_attn.k_proj.weight", rows(qkv, H * d, K * d));
    out.emplace_back(h + "self_attn.v_proj.weight", rows(qkv, (H + K) * d, K * d));
    if (t.attention_bias || t.qkv_bias) {
      const Tensor bias = p.take(b + "attn.qkv.bias", {(H + 2 * K) * d});
      out.emplace_back(h + "self_attn.q_proj.bias", rows(bias, 0, H * d));
      out.emplace_back(h + "self_attn.k_proj.bias", rows(bias, H * d, K * d));
      out.emplace_back(h + "self_attn.v_proj.bias", rows(bias, (H + K) * d, K * d));
    }
    out.emplace_back(h + "self_attn.o_proj.weight", p.take(b + "attn.proj.weight", {C, H * d}));
    if (t.attention_bias) out.emplace_back(h + "self_attn.o_proj.bias", p.take(b + "attn.proj.bias", {C}));
    if (t.qk_norm) {
      out.emplace_back(h + "self_attn.q_norm.weight", norm_weight(p.take(b + "attn.q_norm.weight", {d}), t));
      out.emplace_back(h + "self_attn.k_norm.weight", norm_weight(p.take(b + "attn.k_norm.weight", {d}), t));
    }
    out.emplace_back(h + "post_attention_layernorm.weight", norm_weight(p.take(b + "ln2.weight", {C}), t));
    out.emplace_back(h + "mlp.gate_proj.weight", p.take(b + "mlp.gate.weight", {I, C}));
    out.emplace_back(h + "mlp.up_proj.weight", p.take(b + "mlp.up.weight", {I, C}));
    out.emplace_back(h + "mlp.down_proj.weight", p.take(b + "mlp.proj.weight", {C, I}));
    if (t.attention_bias) {
      out.emplace_back(h + "mlp.gate_proj.bias", p.take(b + "mlp.gate.bias", {I}));
      out.emplace_back(h + "mlp.up_proj.bias", p.take(b + "mlp.up.bias", {I}));
      out.emplace_back(h + "mlp.down_proj.bias", p.take(b + "mlp.proj.bias", {C}));
    }
  }
  out.emplace_back("model.norm.weight", norm_weight(p.take("ln_f.weight", {C}), t));
  head(p, t, out);
  return out;
}

}  // namespace

std::vector<std::pair<std::string, Tensor>> gattn_to_hf(const HfTarget& target,
                                                        const std::vector<std::pair<std::string, Tensor>>& params) {
  Params p(params);
  Named out = target.family == HfFamily::gpt2 ? gpt2(p, target) : llama(p, target);
  p.check_all_used();
  return out;
}

}  // namespace gattn::models
