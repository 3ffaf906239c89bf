// The gate registry: everything about a gate kind, registered by the kind's own file
// (models/gates/<kind>.cpp) and read by everything else — config validation and its messages, the
// run schema's model.gate.<key> keys, the model's construction and FLOP count, the train line,
// benchmarks, tests and the generated docs. Adding a kind that needs no new fused term is one file
// in models/gates/, its test and its term in tests/unit/gate_reference.h (docs/gates.md "Adding a
// kind"): the build lists the files of that folder (cmake/generated_lists.cmake) and the registry links
// each one in.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/tensor/random.h"
#include "core/tensor/tensor.h"
#include "framework/config/schema.h"
#include "models/config.h"

namespace gattn::models {

class Gate;

// A kind-specific config key (beyond kind, layers and the common keys below): the key as a config
// schema types it (its leaf name, default, bounds, doc), which the run's model.gate.<key> shorthand
// is made from, and the check of a value in any gate entry (a model.gates item has no schema types).
struct GateOptionSpec : config::KeySpec {
  bool shared = false;  // one of the options several kinds share (models/gating/options.h)
  // Throws ValueError("<key path>: ...") for a bad value; `key_path` is e.g. "model.gates[1].top_k".
  std::function<void(const nlohmann::json& value, const std::string& key_path, const GateConfig& gate,
                     const ModelConfig& model)>
      check;
};

// A scalar parameter of the kind that the train line of metrics.jsonl logs per layer (e.g. the pair
// gate's mixing weight α): "<metric>_by_layer" (null for a layer without the kind) and "<metric>",
// the mean over the layers that have it.
struct GateLoggedParameter {
  std::string metric;                   // e.g. "pair_alpha"
  std::string parameter;                // its name under the gate's prefix, e.g. "alpha"
  std::function<double(double)> value;  // the logged value of the parameter's one element
  std::string label;                    // what the value is, for charts: e.g. "α = σ(alpha)"
};

// Where in the attention a gate acts, in the order of application (docs/gates.md): on the block's
// normalised input h before attn.qkv, on q and k before the logits, on the logits S before the
// softmax, on the probabilities P after it, on the attention's output y before attn.proj, or on the
// residual stream after attn.proj. `gattn report` draws each gate of a block at its stage.
enum class GateStage { h, qk, scores, probabilities, y, residual };
// What the stage acts on, as the report's diagram names it: "h", "q, k", "S", "P", "y", "x".
const char* gate_stage_symbol(GateStage stage);

struct GateParameterSpec {
  std::string name;  // under the gate's prefix (attn.gate., attn.gate.<kind>. or attn.router.)
  Shape shape;
};

struct GateKindSpec {
  std::string name;
  std::string summary;    // the math in one line (docs table, `gattn gates`)
  std::string reference;  // where the kind comes from: a paper or article title
  // Which of the common keys (activation, temperature, init_bias, init_weight, init_std) the kind reads.
  std::vector<std::string> common_keys;
  // The activations it accepts (when it reads `activation`): a gate on the logits needs log g, the
  // σ family's log σ by default (score adds softplus's log softplus).
  std::vector<std::string> activations = {"sigmoid", "gumbel_sigmoid"};
  std::vector<GateOptionSpec> options;
  // The attentions it can gate (a gate entry's `where`): self always; encoder when its math needs no
  // causal order; cross when it has a cross-attention form (docs/seq2seq.md).
  std::vector<std::string> sites = {kSiteSelf};
  double default_init_bias = 0;  // what init_bias null means
  // Where a block registers its parameters when this is its only gate: "gate" (attn.gate.*), or
  // another name that it keeps in every block (attn.router.* for a router).
  std::string module_name = "gate";
  std::string gate_values;    // what its statistics count as gate values (docs)
  std::string parameter_doc;  // its parameters with symbolic shapes, e.g. "`weight` [H, C], `bias` [H]" (docs)
  // Order among the gates of a block for hooks that more than one kind implements (lower first).
  int order = 0;
  // Where it acts (see GateStage), and `stage_of` where an option or the site moves it (score with
  // form multiplicative scales q and k; context on the cross-attention mixes the residual stream):
  // gate_stage() reads both. Along `order` the stages of the kinds' defaults never go back.
  GateStage stage = GateStage::y;
  std::function<GateStage(const GateConfig&)> stage_of;
  std::function<std::vector<GateParameterSpec>(const ModelConfig&, const GateConfig&)> parameters;
  std::function<std::shared_ptr<Gate>(const ModelConfig&, const GateConfig&, Generator& init)> make;
  // Multiply-adds per token of the gate's own products (a weight shared by the heads counts once
  // per head); the FLOP count takes 6× this for forward + backward.
  std::function<double(const ModelConfig&, const GateConfig&)> multiply_adds;
  // The keys per query its attention mixture visits at length T, or null when the kind leaves the
  // block's one causal attention call as it is. `mean_keys(w)` is one call's mean at span w.
  std::function<double(const GateConfig&, std::int64_t T, const std::function<double(std::int64_t)>& mean_keys)>
      attention_keys;
  // Why regularization.gate_l1 (the mean of the soft gate values) means nothing for the kind, or ""
  // when it can penalise its values.
  std::string gate_l1_refusal;
  // The regularisers of its own the kind computes (routed: router_balance), beyond those every gate
  // has: a regularization.<name> weight needs a kind in the model that computes it.
  std::vector<std::string> regularizers;
  std::vector<GateLoggedParameter> logged_parameters;
  // Gates of other models' architectures that are this kind, by the name models/hf/ gives them
  // (gattn import and export, docs/import.md), each with the options that make the kind compute them.
  std::map<std::string, nlohmann::json> equivalents;
};

// Every registered kind (not "none"), in the order of application.
const std::vector<const GateKindSpec*>& gate_kinds();
// Where the gate entry `gate` of `kind` acts: kind.stage_of(gate), or kind.stage without one.
GateStage gate_stage(const GateKindSpec& kind, const GateConfig& gate);
// The kind named `name`, or nullptr.
const GateKindSpec* find_gate_kind(const std::string& name);
// The kind named `name`; throws ValueError("<key_path>: unknown gate kind '…' (expected one of none,
// …)") listing the registered kinds.
const GateKindSpec& gate_kind(const std::string& name, const std::string& key_path = "model.gate.kind");
// "none, input, output, …": every valid value of a kind key.
std::string gate_kind_list();
// The gate entry (on every layer of the self-attention) that computes `foreign`, a gate some kind
// lists among its `equivalents`; throws ValueError when no kind does.
GateConfig equivalent_gate(const std::string& foreign);
// The other direction: what keeps `gate` from computing `foreign` exactly, empty when it does — its
// kind lists `foreign` among its equivalents, and each option that changes what a trained gate
// computes (the kind's options, activation, temperature) has the equivalent's value, or the default
// where the equivalent names none. Otherwise one item per key that differs, as `bias is true (it
// needs false)`. The initialisation keys (init_*) are not compared: they only set where training began.
std::vector<std::string> equivalent_mismatches(const GateConfig& gate, const std::string& foreign);
// The common keys a gate entry may hold for any kind besides its own: kind, layers, where.
bool is_entry_key(const std::string& key);
// The keys every kind may read (activation, temperature, init_bias, init_weight, init_std).
const std::vector<std::string>& common_gate_keys();
// Every key a gate entry may hold, typed as a config schema key under its leaf name: kind, layers,
// where, the common keys, the shared options, then each kind's own options (a key two kinds register
// appears once; they must agree on its type and default). Defaults are the registry's; a doc names
// the kinds that read the key when not all do. The run's model.gate.<key> shorthand is these keys.
std::vector<config::KeySpec> gate_entry_keys();

// Checks one gate entry against its kind: the kind exists, every key in set_keys means something
// for it, the common and kind-specific values are valid. Throws ValueError naming the key.
void validate_gate_entry(const GateConfig& gate, const ModelConfig& model);

// The kinds as a markdown table (kind, math, parameters, keys with defaults, gate values, source):
// docs/gates.md holds this table verbatim and a test keeps the two equal.
std::string gate_kinds_markdown();

// An option typed by `key` (a config::KeySpec builder's result) with its check.
GateOptionSpec gate_option(
    config::KeySpec key,
    std::function<void(const nlohmann::json&, const std::string&, const GateConfig&, const ModelConfig&)> check);
// An option whose value is one of `choices` (a string).
GateOptionSpec choice_option(std::string key, std::string default_value, std::vector<std::string> choices,
                             std::string doc);

// Defines the registration function of a kind; its file is models/gates/<name>.cpp:
//   GATTN_GATE_KIND(mykind) { GateKindSpec s; s.name = "mykind"; …; return s; }
#define GATTN_GATE_KIND(name)                                                  \
  static ::gattn::models::GateKindSpec make_gate_kind_##name();                \
  const ::gattn::models::GateKindSpec& gate_kind_spec_##name();                \
  const ::gattn::models::GateKindSpec& gate_kind_spec_##name() {               \
    static const ::gattn::models::GateKindSpec spec = make_gate_kind_##name(); \
    return spec;                                                               \
  }                                                                            \
  static ::gattn::models::GateKindSpec make_gate_kind_##name()

}  // namespace gattn::models
