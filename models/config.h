// The model's configuration (`model.*`): sizes and the gates. Validated here so every caller
// (training, inspect, tests) gets the same clear errors; serialised as JSON for checkpoint metadata.
// What each gate kind accepts is not written here: the kinds register it themselves
// (models/gating/registry.h), and validate() asks the registry.
#pragma once
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/tensor/dtype.h"

namespace gattn::models {

// The kind name that means "no gate" (the baseline).
inline constexpr const char* kNoGate = "none";

// `model.position`: how the model knows where a token is. learned: the GPT-2 table wpe.weight [T, C]
// added to the token embeddings; rope: no table, q and k of every head rotated by their absolute
// position (ops/rope.h), so positions past block_size have a meaning; none: no positional encoding
// at all (the Forgetting Transformer's setting: the causal mask, and a forget gate's decay, are all
// the model knows of order), so any length runs.
inline constexpr const char* kPositionLearned = "learned";
inline constexpr const char* kPositionRope = "rope";
inline constexpr const char* kPositionNone = "none";

// `model.arch`: decoder (the GPT: causal self-attention blocks) or encoder_decoder (a bidirectional
// encoder, and decoder blocks that add cross-attention over its output; docs/seq2seq.md).
inline constexpr const char* kArchDecoder = "decoder";
inline constexpr const char* kArchEncoderDecoder = "encoder_decoder";

// `model.norm`: the normalisation of every block's sublayer inputs and of the final stream.
// layernorm: GPT-2's (x − mean)/√(var + eps)·w + b; rmsnorm: Llama's x/√(mean(x²) + eps)·w (no bias,
// no centring), or ·(1 + w) with model.norm_offset (Qwen3-Next's zero-centred weights).
inline constexpr const char* kNormLayer = "layernorm";
inline constexpr const char* kNormRms = "rmsnorm";

// `model.mlp`: gelu: GPT-2's proj(GELU_tanh(fc(h))); swiglu: Llama's proj(silu(gate(h)) ⊙ up(h));
// glu: the sigmoid GLU proj(σ(gate(h)) ⊙ up(h)) ([GateAttn-Guide] §2.1's σ(Wx) ⊙ (Vx)), swiglu's
// parameters and width.
inline constexpr const char* kMlpGelu = "gelu";
inline constexpr const char* kMlpSwiglu = "swiglu";
inline constexpr const char* kMlpGlu = "glu";

// `model.qk_norm`: none, or rmsnorm: q and k normalised per head over head_dim (weights [head_dim]
// shared by the heads, Qwen3's q_norm/k_norm) before the rotation.
inline constexpr const char* kQkNormNone = "none";

// A gate entry's `where`: the attention it gates. self: the decoder's (or the GPT's) causal
// self-attention; encoder: the encoder's bidirectional self-attention; cross: the decoder's
// cross-attention over the encoder output. encoder and cross need model.arch encoder_decoder.
inline constexpr const char* kSiteSelf = "self";
inline constexpr const char* kSiteEncoder = "encoder";
inline constexpr const char* kSiteCross = "cross";

// One gate entry: `model.gate` (the one-gate shorthand) or an item of `model.gates`.
struct GateConfig {
  std::string kind = kNoGate;
  bool all_layers = true;            // `layers: all`
  std::vector<std::int64_t> layers;  // block indices when not all_layers (of the encoder for site encoder)
  std::string site = kSiteSelf;      // `where`: self | encoder | cross
  // Keys most kinds read (each kind declares which of them it uses).
  std::string activation = "sigmoid";  // sigmoid | gumbel_sigmoid | softplus | tanh_magnitude
  double temperature = 1.0;            // τ (> 0): the gate is act(z/τ); the start of a schedule
  // Initial gate bias; NaN = the kind's default (registered with the kind).
  double init_bias = std::numeric_limits<double>::quiet_NaN();
  std::string init_weight = "normal";  // zero | normal (std init_std)
  double init_std = 0.02;              // the normal initial weights' standard deviation (> 0)
  // Kind-specific keys (e.g. a granularity, expert spans), by name; a key left out reads as the
  // kind's registered default. Keys of other kinds may be present (the shorthand carries every
  // schema key) and are ignored unless named in set_keys.
  nlohmann::json options = nlohmann::json::object();
  // The keys a config file or override named for this entry: each must mean something for the kind
  // (a config error otherwise). Empty for configs read back from JSON metadata.
  std::vector<std::string> set_keys;
  std::string where = "model.gate";  // how messages name this entry ("model.gates[1]")

  bool applies_to(std::int64_t layer) const;  // false for kind none
  double resolved_init_bias() const;          // init_bias, or the kind's default
  // A kind-specific option: its value, or the kind's registered default.
  nlohmann::json option(const std::string& key) const;
  std::int64_t int_option(const std::string& key) const { return option(key).get<std::int64_t>(); }
  std::vector<std::int64_t> int_list_option(const std::string& key) const {
    return option(key).get<std::vector<std::int64_t>>();
  }
  std::string string_option(const std::string& key) const { return option(key).get<std::string>(); }
};

struct ModelConfig {
  std::int64_t vocab_size = 0;  // taken from the data when 0
  std::int64_t block_size = 128;
  std::int64_t n_layer = 4;
  std::int64_t n_head = 4;
  std::int64_t n_embd = 128;
  std::string position = kPositionLearned;  // learned | rope | none
  std::string arch = kArchDecoder;          // decoder | encoder_decoder
  std::int64_t n_encoder_layer = 0;         // encoder_decoder: encoder blocks (0 = n_layer)
  // The block's parts (docs/architecture.md). Every default is GPT-2's, so a config or checkpoint
  // without these keys builds today's model bit for bit.
  std::string norm = kNormLayer;  // layernorm | rmsnorm
  double norm_eps = 1e-5;
  bool norm_offset = false;           // rmsnorm only: weights applied as 1 + w (stored w, initialised 0)
  std::string mlp = kMlpGelu;         // gelu | swiglu | glu
  std::int64_t mlp_hidden = 0;        // the MLP's hidden width (0 = mlp_width()'s default)
  std::int64_t n_kv_head = 0;         // key/value heads (0 = n_head); must divide n_head
  std::int64_t head_dim_size = 0;     // `model.head_dim`: per-head width (0 = n_embd / n_head)
  std::string qk_norm = kQkNormNone;  // none | rmsnorm
  double rope_theta = 10000.0;        // rope: the frequency base
  double rope_fraction = 1.0;         // rope: the share of each head's dimensions rotated (the first ones)
  bool bias = true;                   // biases of the linear layers (qkv, attn.proj, the MLP's)
  bool qkv_bias = false;              // q, k, v biases even when bias is false (Qwen2)
  bool tie_embeddings = true;         // the head is wte (true) or its own lm_head.weight [V, C]
  GateConfig gate;                    // `model.gate`: the one-gate shorthand
  std::vector<GateConfig> gates;      // `model.gates`: several gates (then `gate` stays kind none)
  // Parameter and compute dtype: f32 for training, f64 so tests can gradcheck the whole model.
  // Not part of the serialised config (checkpoints always hold F32 weights).
  DType dtype = DType::f32;

  std::int64_t head_dim() const { return head_dim_size > 0 ? head_dim_size : n_embd / n_head; }
  std::int64_t kv_heads() const { return n_kv_head > 0 ? n_kv_head : n_head; }
  // The attention's width H·d (n_embd unless model.head_dim says otherwise).
  std::int64_t attention_width() const { return n_head * head_dim(); }
  // The MLP's hidden width: mlp_hidden, or 4C for gelu and ⌈(8C/3)/32⌉·32 for swiglu and glu (Llama's
  // 2/3 of 4C, so their three matrices hold about the parameters of gelu's two, rounded up to a
  // multiple of 32).
  std::int64_t mlp_width() const;
  // The dimensions of a head rope rotates: ⌊rope_fraction·head_dim⌋.
  std::int64_t rope_dims() const;
  bool rms_norm() const { return norm == kNormRms; }
  bool swiglu() const { return mlp == kMlpSwiglu; }
  // A gated MLP (swiglu or glu): mlp.gate and mlp.up [F, C] instead of gelu's mlp.fc.
  bool gated_mlp() const { return mlp == kMlpSwiglu || mlp == kMlpGlu; }
  bool has_qkv_bias() const { return bias || qkv_bias; }
  bool rope() const { return position == kPositionRope; }
  // The wpe table exists, and with it the block_size limit on positions (rope and none run on).
  bool learned_positions() const { return position == kPositionLearned; }
  bool encoder_decoder() const { return arch == kArchEncoderDecoder; }
  // The encoder's blocks: n_encoder_layer, or n_layer when it is 0 (none for a decoder).
  std::int64_t encoder_layers() const {
    return encoder_decoder() ? (n_encoder_layer > 0 ? n_encoder_layer : n_layer) : 0;
  }
  // The blocks a gate at `site` may sit in: the encoder's for encoder, the decoder's otherwise.
  std::int64_t site_layers(const std::string& site) const { return site == kSiteEncoder ? encoder_layers() : n_layer; }
  // The gate entries in effect: `gates`, or the shorthand when it names a kind.
  std::vector<GateConfig> gate_entries() const;
  // The entries at `site` that apply to block `layer` (of the encoder for site encoder), in the fixed
  // order of application.
  std::vector<GateConfig> layer_gates(std::int64_t layer, const std::string& site = kSiteSelf) const;
  bool has_gates() const { return !gate_entries().empty(); }
  // Throws ValueError naming the key (`model.n_head`, `model.gate.top_k`, `model.gates[1].kind`, ...)
  // on a bad value.
  void validate() const;
};

nlohmann::json to_json(const ModelConfig& c);
nlohmann::json gate_to_json(const GateConfig& g);
// Throws ValueError naming the key for a missing/mistyped field.
ModelConfig model_config_from_json(const nlohmann::json& j);
// One gate entry from its JSON map; `where` names it in messages. The keys it holds become set_keys
// when `record_keys` (entries a user wrote) and not otherwise (metadata read back).
GateConfig gate_from_json(const nlohmann::json& j, const std::string& where, bool record_keys);

}  // namespace gattn::models
