// The table of every config key (the names docs/config.md documents) with its default and bounds, and the helpers that
// check values against it and suggest the nearest key for a typo.
#include "framework/config/schema.h"

#include <algorithm>
#include <limits>
#include <sstream>

namespace gattn::config {

namespace {

using nlohmann::json;

// Builders keep the table one line per key.
KeySpec int_key(std::string key, std::int64_t def, std::optional<double> min, std::string doc, bool min_excl = false) {
  KeySpec s;
  s.key = std::move(key);
  s.type = KeyType::integer;
  s.default_value = def;
  s.min = min;
  s.min_exclusive = min_excl;
  s.doc = std::move(doc);
  return s;
}
KeySpec pos_int(std::string key, std::int64_t def, std::string doc) {
  return int_key(std::move(key), def, 0.0, std::move(doc), /*min_excl=*/true);
}
KeySpec num_key(std::string key, std::optional<double> def, std::optional<double> min, bool min_excl, std::string doc) {
  KeySpec s;
  s.key = std::move(key);
  s.type = KeyType::number;
  s.default_value = def ? json(*def) : json(nullptr);
  s.min = min;
  s.min_exclusive = min_excl;
  s.doc = std::move(doc);
  return s;
}
KeySpec choice_key(std::string key, std::string def, std::vector<std::string> choices, std::string doc) {
  KeySpec s;
  s.key = std::move(key);
  s.type = KeyType::choice;
  s.default_value = std::move(def);
  s.choices = std::move(choices);
  s.doc = std::move(doc);
  return s;
}
KeySpec str_key(std::string key, std::string def, std::string doc) {
  KeySpec s;
  s.key = std::move(key);
  s.type = KeyType::string;
  s.default_value = std::move(def);
  s.doc = std::move(doc);
  return s;
}

std::vector<KeySpec> make_schema() {
  std::vector<KeySpec> s;
  s.push_back(str_key("run.name", "run", "the run's name"));
  s.push_back(str_key("run.dir", "", "the run's directory (empty = runs/<run.name>)"));
  s.push_back(int_key("seed", 0, std::nullopt, "one integer from which every RNG stream is derived"));
  s.push_back(choice_key("device", "auto", {"auto", "cpu", "cuda"}, "auto (CUDA when a device exists), cpu or cuda"));

  s.push_back(int_key("model.vocab_size", 0, 0.0, "vocabulary size (0 = taken from the data)"));
  s.push_back(pos_int("model.block_size", 128, "context length T"));
  s.push_back(pos_int("model.n_layer", 4, "number of Transformer blocks"));
  s.push_back(pos_int("model.n_head", 4, "attention heads per block"));
  s.push_back(pos_int("model.n_embd", 128, "embedding width C (divisible by n_head)"));
  s.push_back(str_key("model.gate.kind", "none",
                      "the gate kind: none or a registered kind (`gattn gates` lists them; docs/gates.md)"));
  s.push_back(choice_key("model.gate.granularity", "elementwise", {"elementwise", "headwise"},
                         "output gate: one value per channel or per head"));
  {
    KeySpec k;
    k.key = "model.gate.layers";
    k.type = KeyType::all_or_int_list;
    k.default_value = "all";
    k.min = 0.0;
    k.doc = "blocks with a gate: all or a list of block indices";
    s.push_back(k);
  }
  s.push_back(choice_key("model.gate.activation", "sigmoid", {"sigmoid", "gumbel_sigmoid"},
                         "gate nonlinearity (gumbel_sigmoid adds logistic noise while training)"));
  s.push_back(num_key("model.gate.temperature", 1.0, 0.0, true, "gumbel_sigmoid temperature"));
  {
    KeySpec k = num_key("model.gate.init_bias", std::nullopt, std::nullopt, false,
                        "initial gate bias (null = the kind's default: 3 for forget, else 0)");
    k.nullable = true;
    s.push_back(k);
  }
  s.push_back(choice_key("model.gate.init_weight", "normal", {"zero", "normal"},
                         "initial gate weights: zero or normal (std 0.02)"));
  {
    KeySpec k;
    k.key = "model.gate.windows";
    k.type = KeyType::int_list;
    k.default_value = json::array({0, 32});
    k.min = 0.0;
    k.doc = "routed: expert attention spans (0 = full causal)";
    s.push_back(k);
  }
  s.push_back(int_key("model.gate.top_k", 1, 1.0, "routed: experts per token"));
  {
    KeySpec k;
    k.key = "model.gates";
    k.type = KeyType::gate_list;
    k.default_value = json::array();
    k.doc = "several gates: a list of entries with the keys of model.gate (not together with model.gate)";
    s.push_back(k);
  }

  s.push_back(choice_key("data.kind", "synthetic", {"text", "tokens", "synthetic"},
                         "text (UTF-8 file, char-level), tokens (llm.c .bin shards) or synthetic"));
  s.push_back(str_key("data.path", "", "the text file or token shard(s) (text and tokens)"));
  s.push_back(choice_key("data.task", "copy", {"copy", "assoc_recall", "noisy_recall"}, "synthetic task"));
  s.push_back(pos_int("data.vocab_size", 32, "synthetic: vocabulary size"));
  s.push_back(int_key("data.n_pairs", 4, 0.0, "synthetic: key-value pairs per sequence"));
  s.push_back(int_key("data.n_distractors", 0, 0.0, "synthetic: distractor tokens per sequence"));

  s.push_back(pos_int("train.batch_size", 12, "per-rank micro-batch size"));
  s.push_back(pos_int("train.max_steps", 2000, "optimizer steps"));
  s.push_back(int_key("train.grad_accum", 1, 1.0, "micro-batches per optimizer step"));
  s.push_back(int_key("train.log_every", 10, 1.0, "steps between train log lines"));
  s.push_back(int_key("train.threads", 0, 0.0, "CPU threads (0 = all cores)"));
  s.push_back(choice_key("train.precision", "fp32", {"fp32", "bf16"}, "compute precision"));
  s.push_back(int_key("train.max_bad_steps", 3, 1.0, "consecutive NaN/Inf steps skipped before the run fails"));

  s.push_back(int_key("eval.every", 250, 0.0, "steps between evals (0 = only at the end)"));
  s.push_back(int_key("eval.max_windows", 200, 0.0, "val windows per eval (0 = all)"));

  s.push_back(int_key("checkpoint.every", 500, 0.0, "steps between checkpoints (0 = only the final one)"));
  s.push_back(int_key("checkpoint.keep_last", 3, 0.0, "newest checkpoints kept (0 = keep all)"));
  s.push_back(int_key("checkpoint.keep_every", 0, 0.0, "also keep checkpoints at multiples of this step (0 = none)"));

  s.push_back(num_key("optim.lr", 1e-3, 0.0, true, "peak learning rate"));
  {
    KeySpec k;
    k.key = "optim.betas";
    k.type = KeyType::number_list;
    k.default_value = json::array({0.9, 0.99});
    k.min = 0.0;
    k.max = 1.0;
    k.max_exclusive = true;
    k.length = 2;
    k.doc = "AdamW beta1, beta2";
    s.push_back(k);
  }
  s.push_back(num_key("optim.eps", 1e-8, 0.0, true, "AdamW epsilon"));
  s.push_back(num_key("optim.weight_decay", 0.1, 0.0, false, "decoupled weight decay"));
  s.push_back(num_key("optim.grad_clip", 1.0, 0.0, false, "global gradient-norm clip (0 = off)"));
  s.push_back(choice_key("optim.schedule", "cosine", {"constant", "cosine"}, "learning-rate schedule"));
  s.push_back(int_key("optim.warmup_steps", 100, 0.0, "linear warm-up steps"));
  s.push_back(num_key("optim.min_lr", 1e-4, 0.0, false, "cosine: final learning rate"));
  {
    KeySpec k;
    k.key = "optim.param_groups";
    k.type = KeyType::param_groups;
    k.default_value = json::array();
    k.doc = "ordered groups {name, match, lr | lr_scale, weight_decay, freeze_steps}";
    s.push_back(k);
  }

  s.push_back(num_key("regularization.gate_entropy", 0.0, std::nullopt, false,
                      "weight of the gate binary entropy (> 0 pushes gates to 0/1)"));
  s.push_back(num_key("regularization.attn_entropy", 0.0, std::nullopt, false, "weight of the attention entropy"));
  s.push_back(num_key("regularization.router_balance", 0.0, std::nullopt, false,
                      "weight of the routed gate's load-balance loss"));
  {
    KeySpec k = int_key("dist.zero", 0, 0.0, "1 = shard optimizer state across ranks (ZeRO-1)");
    k.max = 1.0;
    s.push_back(k);
  }
  s.push_back(num_key("dist.timeout_s", 300.0, 0.0, true,
                      "seconds a collective waits for the other ranks before the run fails (a rank died or stalled)"));
  return s;
}

std::string num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

const std::vector<KeySpec>& schema() {
  static const std::vector<KeySpec> s = make_schema();
  return s;
}

const KeySpec* find_key(const std::string& key) {
  for (const KeySpec& s : schema())
    if (s.key == key) return &s;
  return nullptr;
}

bool is_section(const std::string& key) {
  if (key.empty()) return false;
  for (const KeySpec& s : schema())
    if (s.key.size() > key.size() && s.key.compare(0, key.size(), key) == 0 && s.key[key.size()] == '.') return true;
  return false;
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest_of(const std::string& key, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = 3;  // suggest only within distance 2: farther guesses mislead more than help
  for (const std::string& c : candidates) {
    std::size_t d = edit_distance(key, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

std::string closest_key(const std::string& key) {
  std::vector<std::string> names;
  for (const KeySpec& s : schema()) {
    names.push_back(s.key);
    // Sections too, so a misspelt section ("optm") is matched against "optim".
    for (std::size_t p = s.key.find('.'); p != std::string::npos; p = s.key.find('.', p + 1))
      names.push_back(s.key.substr(0, p));
  }
  return closest_of(key, names);
}

std::string describe_bounds(const KeySpec& spec) {
  if (spec.type == KeyType::choice) {
    std::string out = "must be one of ";
    for (std::size_t i = 0; i < spec.choices.size(); ++i) {
      if (i) out += ", ";
      out += spec.choices[i];
    }
    return out;
  }
  if (spec.min && spec.max)
    return "must be in " + std::string(spec.min_exclusive ? "(" : "[") + num(*spec.min) + ", " + num(*spec.max) +
           (spec.max_exclusive ? ")" : "]");
  if (spec.min) return std::string("must be ") + (spec.min_exclusive ? "> " : ">= ") + num(*spec.min);
  if (spec.max) return std::string("must be ") + (spec.max_exclusive ? "< " : "<= ") + num(*spec.max);
  return "";
}

std::string check_bounds(const KeySpec& spec, double v) {
  bool ok = true;
  if (spec.min) ok = ok && (spec.min_exclusive ? v > *spec.min : v >= *spec.min);
  if (spec.max) ok = ok && (spec.max_exclusive ? v < *spec.max : v <= *spec.max);
  return ok ? "" : describe_bounds(spec);
}

const std::vector<std::string>& param_group_keys() {
  static const std::vector<std::string> keys = {"name", "match", "lr", "lr_scale", "weight_decay", "freeze_steps"};
  return keys;
}

}  // namespace gattn::config
