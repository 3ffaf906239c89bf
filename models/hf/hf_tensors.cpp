// Hugging Face tensors → gattn parameters (docs/import.md has the table). Every tensor is taken with
// the shape config.json implies, converted to f32 (bf16 and f16 exactly), transposed where GPT-2's
// Conv1D stores [in, out], and q, k, v stacked into gattn's one qkv matrix; a tensor nothing took is
// an error, so a weight the config does not account for is never dropped silently.
#include <cstring>
#include <set>

#include "core/tensor/error.h"
#include "framework/io/errors.h"
#include "framework/io/safetensors.h"
#include "models/hf/hf_layout.h"
#include "models/hf/hf_model.h"

namespace gattn::models {

namespace {

using Named = std::vector<std::pair<std::string, Tensor>>;

using hf_layout::rows;
using hf_layout::stacked;
using hf_layout::transposed;

std::string dims(const Shape& s) { return shape_str(s); }

// The weights, taken by name with the shape the config implies; remembers what was taken.
class Source {
 public:
  Source(const HfModel& m, const std::string& dir, const std::map<std::string, HfTensor>& w)
      : m_(m), dir_(dir), w_(w) {}

  bool has(const std::string& name) const { return w_.count(name) > 0; }

  // `why` spells the shape in config.json's keys, for the message when the file disagrees.
  Tensor take(const std::string& name, const Shape& shape, const std::string& why) {
    auto it = w_.find(name);
    if (it == w_.end())
      throw CheckpointError("import --hf: " + dir_ + ": tensor '" + name + "' is missing (" + m_.architecture +
                            " as its config.json describes it has one, " + why + " = " + dims(shape) + ")");
    if (it->second.value.shape() != shape)
      throw CheckpointError("safetensors file '" + it->second.file + "': tensor '" + name + "' has shape " +
                            dims(it->second.value.shape()) + ", but " + m_.config_path + " implies " + why + " = " +
                            dims(shape) + " (config.json and the weights disagree)");
    used_.insert(name);
    return it->second.value.to(DType::f32);
  }

  // Every tensor taken: anything left is a weight the class (with this config) does not have.
  void check_all_used() const {
    for (const auto& [name, t] : w_)
      if (!used_.count(name))
        throw CheckpointError("safetensors file '" + t.file + "': tensor '" + printable_name(name) +
                              "' is not a weight of " + m_.architecture + " as " + m_.config_path +
                              " describes it (a key there that says otherwise, or a file of another model?)");
  }

  const std::string& file_of(const std::string& name) const { return w_.at(name).file; }

 private:
  const HfModel& m_;
  std::string dir_;
  const std::map<std::string, HfTensor>& w_;
  std::set<std::string> used_;
};

// The head: lm_head.weight when untied; when tied, a stored lm_head.weight must be the embedding.
void head(Source& src, const HfModel& m, const std::string& embedding, const Tensor& wte, Named& out) {
  const ModelConfig& c = m.config;
  const Shape shape{c.vocab_size, c.n_embd};
  if (!c.tie_embeddings) {
    out.emplace_back("lm_head.weight", src.take("lm_head.weight", shape, "[vocab_size, hidden_size]"));
    return;
  }
  if (!src.has("lm_head.weight")) return;
  const Tensor head = src.take("lm_head.weight", shape, "[vocab_size, hidden_size]");
  if (std::memcmp(head.data<float>(), wte.data<float>(), static_cast<std::size_t>(head.numel()) * 4) != 0)
    throw ValueError("import --hf: " + m.config_path + ": tie_word_embeddings is true, but lm_head.weight (in " +
                     src.file_of("lm_head.weight") + ") differs from " + embedding +
                     ": the model's head is not its embedding");
}

Named gpt2(Source& src, const HfModel& m) {
  const ModelConfig& c = m.config;
  const std::int64_t C = c.n_embd, I = c.mlp_width(), V = c.vocab_size;
  // GPT2LMHeadModel saves its weights under transformer.; a GPT2Model file (the original gpt2
  // upload) has none.
  const std::string p = !src.has("transformer.wte.weight") && src.has("wte.weight") ? "" : "transformer.";
  Named out;
  const Tensor wte = src.take(p + "wte.weight", {V, C}, "[vocab_size, n_embd]");
  out.emplace_back("wte.weight", wte);
  out.emplace_back("wpe.weight",
                   rows(src.take(p + "wpe.weight", {m.max_positions, C}, "[n_positions, n_embd]"), 0, c.block_size));
  const std::string inner = c.mlp_hidden > 0 ? "n_inner" : "4·n_embd";
  for (std::int64_t i = 0; i < c.n_layer; ++i) {
    const std::string h = p + "h." + std::to_string(i) + ".", b = "blocks." + std::to_string(i) + ".";
    out.emplace_back(b + "ln1.weight", src.take(h + "ln_1.weight", {C}, "[n_embd]"));
    out.emplace_back(b + "ln1.bias", src.take(h + "ln_1.bias", {C}, "[n_embd]"));
    // Conv1D stores [in, out]: gattn's Linear is [out, in]. c_attn's columns are q | k | v.
    out.emplace_back(b + "attn.qkv.weight",
                     transposed(src.take(h + "attn.c_attn.weight", {C, 3 * C}, "[n_embd, 3·n_embd]")));
    out.emplace_back(b + "attn.qkv.bias", src.take(h + "attn.c_attn.bias", {3 * C}, "[3·n_embd]"));
    out.emplace_back(b + "attn.proj.weight",
                     transposed(src.take(h + "attn.c_proj.weight", {C, C}, "[n_embd, n_embd]")));
    out.emplace_back(b + "attn.proj.bias", src.take(h + "attn.c_proj.bias", {C}, "[n_embd]"));
    out.emplace_back(b + "ln2.weight", src.take(h + "ln_2.weight", {C}, "[n_embd]"));
    out.emplace_back(b + "ln2.bias", src.take(h + "ln_2.bias", {C}, "[n_embd]"));
    out.emplace_back(b + "mlp.fc.weight",
                     transposed(src.take(h + "mlp.c_fc.weight", {C, I}, "[n_embd, " + inner + "]")));
    out.emplace_back(b + "mlp.fc.bias", src.take(h + "mlp.c_fc.bias", {I}, "[" + inner + "]"));
    out.emplace_back(b + "mlp.proj.weight",
                     transposed(src.take(h + "mlp.c_proj.weight", {I, C}, "[" + inner + ", n_embd]")));
    out.emplace_back(b + "mlp.proj.bias", src.take(h + "mlp.c_proj.bias", {C}, "[n_embd]"));
  }
  out.emplace_back("ln_f.weight", src.take(p + "ln_f.weight", {C}, "[n_embd]"));
  out.emplace_back("ln_f.bias", src.take(p + "ln_f.bias", {C}, "[n_embd]"));
  head(src, m, p + "wte.weight", wte, out);
  return out;
}

Named llama(Source& src, const HfModel& m) {
  const ModelConfig& c = m.config;
  const std::int64_t C = c.n_embd, H = c.n_head, K = c.kv_heads(), d = c.head_dim(), I = c.mlp_width(),
                     V = c.vocab_size;
  Named out;
  const Tensor wte = src.take("model.embed_tokens.weight", {V, C}, "[vocab_size, hidden_size]");
  out.emplace_back("wte.weight", wte);
  const std::string kv = "[num_key_value_heads·head_dim";
  for (std::int64_t i = 0; i < c.n_layer; ++i) {
    const std::string h = "model.layers." + std::to_string(i) + ".", b = "blocks." + std::to_string(i) + ".";
    out.emplace_back(b + "ln1.weight", src.take(h + "input_layernorm.weight", {C}, "[hidden_size]"));
    Tensor q;
    if (m.output_gate) {
      // q_proj's output is viewed per head as [query (d) | gate (d)] (torch.chunk of a 2d-wide head):
      // the query rows go to qkv, the gate rows to the output gate, both head by head.
      const Tensor qg =
          src.take(h + "self_attn.q_proj.weight", {2 * H * d, C}, "[2·num_attention_heads·head_dim, hidden_size]");
      std::vector<Tensor> query, gate;
      for (std::int64_t n = 0; n < H; ++n) {
        query.push_back(rows(qg, 2 * n * d, d));
        gate.push_back(rows(qg, 2 * n * d + d, d));
      }
      q = stacked(query);
      out.emplace_back(b + "attn.gate.weight", stacked(gate));
    } else {
      q = src.take(h + "self_attn.q_proj.weight", {H * d, C}, "[num_attention_heads·head_dim, hidden_size]");
    }
    const Tensor k = src.take(h + "self_attn.k_proj.weight", {K * d, C}, kv + ", hidden_size]");
    const Tensor v = src.take(h + "self_attn.v_proj.weight", {K * d, C}, kv + ", hidden_size]");
    out.emplace_back(b + "attn.qkv.weight", stacked({q, k, v}));
    if (m.attention_bias || m.qkv_bias)
      out.emplace_back(b + "attn.qkv.bias",
                       stacked({src.take(h + "self_attn.q_proj.bias", {H * d}, "[num_attention_heads·head_dim]"),
                                src.take(h + "self_attn.k_proj.bias", {K * d}, kv + "]"),
                                src.take(h + "self_attn.v_proj.bias", {K * d}, kv + "]")}));
    out.emplace_back(b + "attn.proj.weight", src.take(h + "self_attn.o_proj.weight", {C, H * d},
                                                      "[hidden_size, num_attention_heads·head_dim]"));
    if (m.attention_bias)
      out.emplace_back(b + "attn.proj.bias", src.take(h + "self_attn.o_proj.bias", {C}, "[hidden_size]"));
    if (m.qk_norm) {
      out.emplace_back(b + "attn.q_norm.weight", src.take(h + "self_attn.q_norm.weight", {d}, "[head_dim]"));
      out.emplace_back(b + "attn.k_norm.weight", src.take(h + "self_attn.k_norm.weight", {d}, "[head_dim]"));
    }
    out.emplace_back(b + "ln2.weight", src.take(h + "post_attention_layernorm.weight", {C}, "[hidden_size]"));
    out.emplace_back(b + "mlp.gate.weight",
                     src.take(h + "mlp.gate_proj.weight", {I, C}, "[intermediate_size, hidden_size]"));
    out.emplace_back(b + "mlp.up.weight",
                     src.take(h + "mlp.up_proj.weight", {I, C}, "[intermediate_size, hidden_size]"));
    out.emplace_back(b + "mlp.proj.weight",
                     src.take(h + "mlp.down_proj.weight", {C, I}, "[hidden_size, intermediate_size]"));
    if (m.mlp_bias) {
      out.emplace_back(b + "mlp.gate.bias", src.take(h + "mlp.gate_proj.bias", {I}, "[intermediate_size]"));
      out.emplace_back(b + "mlp.up.bias", src.take(h + "mlp.up_proj.bias", {I}, "[intermediate_size]"));
      out.emplace_back(b + "mlp.proj.bias", src.take(h + "mlp.down_proj.bias", {C}, "[hidden_size]"));
    }
  }
  out.emplace_back("ln_f.weight", src.take("model.norm.weight", {C}, "[hidden_size]"));
  head(src, m, "model.embed_tokens.weight", wte, out);
  return out;
}

}  // namespace

std::vector<std::pair<std::string, Tensor>> hf_to_gattn(const HfModel& model, const std::string& dir,
                                                        const std::map<std::string, HfTensor>& weights) {
  Source src(model, dir, weights);
  Named out = model.family == HfFamily::gpt2 ? gpt2(src, model) : llama(src, model);
  src.check_all_used();
  return out;
}

}  // namespace gattn::models
