// One entry per key, each in the same shape: the builder (key, default, what its type needs, doc),
// then its modifiers in their one order (framework/config/schema.h). A doc is what the annotated
// example (`gattn config example`, configs/example_full.yaml) writes beside the key and the key table
// of docs/config.md (`gattn config keys`) prints. The model.gate.<key> shorthand is not listed here:
// its keys are the gate registry's, typed where the kinds register them (models/gating/registry.h).
#include "recipes/common/run_schema.h"

#include <optional>

#include "models/gating/registry.h"

namespace gattn {

namespace {

using namespace config;

std::vector<KeySpec> run_keys() {
  std::vector<KeySpec> s;
  s.push_back(str_key("run.name", "run", "the run's name (one folder name: the run goes to runs/<run.name>)"));
  s.push_back(str_key("run.dir", "", "the run's directory (\"\" = runs/<run.name>)"));
  s.push_back(int_key("seed", 0, "one integer from which every RNG stream is derived"));
  s.push_back(choice_key("device", "auto", {"auto", "cpu", "cuda"}, "auto (CUDA when a device exists) | cpu | cuda"));

  s.push_back(int_key("model.vocab_size", 0, "vocabulary size (0 = taken from the data)").at_least(0));
  s.push_back(int_key("model.block_size", 128, "context length T").greater_than(0));
  s.push_back(int_key("model.n_layer", 4, "Transformer blocks").greater_than(0));
  s.push_back(int_key("model.n_head", 4, "attention heads per block").greater_than(0));
  s.push_back(int_key("model.n_embd", 128, "embedding width C (divisible by n_head)").greater_than(0));
  s.push_back(choice_key("model.position", "learned", {"learned", "rope", "none"},
                         "learned (the table wpe.weight, positions < block_size) | rope (q, k rotated per head by "
                         "their position; no wpe; needs an even n_embd/n_head) | none (no positional encoding: "
                         "the causal mask and a forget gate's decay carry order; any length runs)"));
  s.push_back(choice_key("model.arch", "decoder", {"decoder", "encoder_decoder"},
                         "decoder (a GPT) | encoder_decoder (a bidirectional encoder and cross-attention in the "
                         "decoder; docs/seq2seq.md)"));
  s.push_back(int_key("model.n_encoder_layer", 0, "encoder_decoder: the encoder's blocks (0 = n_layer)").at_least(0));
  s.push_back(choice_key("model.norm", "layernorm", {"layernorm", "rmsnorm"},
                         "layernorm (GPT-2: weight and bias) | rmsnorm (Llama: weight only, no centring)"));
  s.push_back(num_key("model.norm_eps", 1e-5, "the norms' epsilon").greater_than(0));
  s.push_back(bool_key("model.norm_offset", false,
                       "rmsnorm: weights applied as 1 + w, stored w and initialised 0 (Qwen3-Next's zero-centred "
                       "norm)"));
  s.push_back(choice_key("model.mlp", "gelu", {"gelu", "swiglu", "glu"},
                         "gelu (GPT-2: mlp.fc, mlp.proj) | swiglu (Llama: silu(gate) ⊙ up; mlp.gate, mlp.up, "
                         "mlp.proj) | glu (σ(gate) ⊙ up, swiglu's parameters)"));
  s.push_back(int_key("model.mlp_hidden", 0,
                      "the MLP's hidden width (0 = 4·n_embd for gelu, ⌈8·n_embd/3⌉ rounded up to a multiple of 32 "
                      "for swiglu and glu)")
                  .at_least(0));
  s.push_back(int_key("model.n_kv_head", 0,
                      "key/value heads (0 = n_head; must divide n_head): grouped-query attention, multi-query at 1")
                  .at_least(0));
  s.push_back(int_key("model.head_dim", 0, "per-head width d (0 = n_embd / n_head)").at_least(0));
  s.push_back(choice_key("model.qk_norm", "none", {"none", "rmsnorm"},
                         "none | rmsnorm (q and k normalised per head over head_dim before the rotation; "
                         "attn.q_norm, attn.k_norm)"));
  s.push_back(num_key("model.rope_theta", 10000.0, "rope: the frequency base θ").greater_than(1));
  s.push_back(num_key("model.rope_fraction", 1.0,
                      "rope: the share of each head's dimensions rotated, the first ones (Qwen3-Next: 0.25)")
                  .greater_than(0)
                  .at_most(1));
  s.push_back(bool_key("model.bias", true, "biases in the linear layers (qkv, attn.proj, the MLP)"));
  s.push_back(bool_key("model.qkv_bias", false, "biases on q, k and v even when model.bias is false (Qwen2)"));
  s.push_back(bool_key("model.tie_embeddings", true, "the head is wte (true) or its own lm_head.weight [V, C]"));
  for (KeySpec key : models::gate_entry_keys()) {
    key.key = "model.gate." + key.key;
    s.push_back(std::move(key));
  }
  s.push_back(map_list_key("model.gates", "gate entries", "{kind: ..., ...}",
                           "several gates: a list of entries with model.gate's keys, e.g. [{kind: input}, {kind: "
                           "output, layers: [2, 3]}] (not together with model.gate)"));

  s.push_back(choice_key("data.kind", "synthetic", {"text", "tokens", "synthetic", "pairs"},
                         "text (UTF-8 file, char-level) | tokens (llm.c .bin shards) | synthetic | pairs "
                         "(source<TAB>target lines; docs/seq2seq.md)"));
  s.push_back(
      str_key("data.path", "", "the text file, token shards or pairs file (required for text, tokens and pairs)"));
  s.push_back(str_key("data.tokenizer", "",
                      "pairs: a `gattn tokenize train` directory to encode them with (\"\" = byte-level)"));
  s.push_back(choice_key("data.task", "copy",
                         {"copy", "assoc_recall", "noisy_recall", "mqar", "reverse", "sort", "noisy_copy"},
                         "synthetic task: copy | assoc_recall | noisy_recall | mqar (Zoology's multi-query recall), or "
                         "seq2seq: reverse | sort | noisy_copy"));
  s.push_back(int_key("data.vocab_size", 32, "synthetic: vocabulary size").greater_than(0));
  s.push_back(int_key("data.n_pairs", 4,
                      "synthetic: key-value pairs per sequence (recall; mqar: 0 = one per 16 tokens), tokens per "
                      "source (copy, seq2seq tasks)")
                  .at_least(0));
  s.push_back(int_key("data.n_distractors", 0, "synthetic: distractor tokens per sequence").at_least(0));

  s.push_back(int_key("train.batch_size", 12, "per-rank micro-batch size").greater_than(0));
  s.push_back(int_key("train.max_steps", 2000, "optimizer steps").greater_than(0));
  s.push_back(int_key("train.grad_accum", 1, "micro-batches accumulated per optimizer step").at_least(1));
  s.push_back(int_key("train.log_every", 10, "steps between train lines in metrics.jsonl").at_least(1));
  s.push_back(int_key("train.threads", 0, "CPU threads (0 = all cores)").at_least(0));
  s.push_back(choice_key("train.parallel", "auto", {"auto", "rows", "ops"},
                         "rows (a part of the batch per thread) | ops (each op over the threads) | auto (rows when "
                         "the threads divide batch_size on the CPU)"));
  s.push_back(choice_key("train.precision", "fp32", {"fp32", "bf16"}, "fp32 | bf16 (mixed precision on CUDA)"));
  s.push_back(str_key("train.init_from", "",
                      "a checkpoint (or run) directory whose weights start the run, not its optimizer or step; "
                      "the config may add gates, each with a ramp (docs/finetune.md)"));
  s.push_back(
      int_key("train.max_bad_steps", 3, "consecutive NaN/Inf steps skipped before the run fails (exit 4)").at_least(1));

  s.push_back(int_key("eval.every", 250, "steps between evals (0 = only at the end)").at_least(0));
  s.push_back(int_key("eval.max_windows", 200, "val windows per eval (0 = all)").at_least(0));

  s.push_back(int_key("checkpoint.every", 500, "steps between checkpoints (0 = only the final one)").at_least(0));
  s.push_back(int_key("checkpoint.keep_last", 3, "newest checkpoints kept (0 = keep all)").at_least(0));
  s.push_back(
      int_key("checkpoint.keep_every", 0, "also keep checkpoints at multiples of this step (0 = none)").at_least(0));

  s.push_back(num_key("optim.lr", 1e-3, "peak learning rate (AdamW)").greater_than(0));
  s.push_back(num_list_key("optim.betas", {0.9, 0.99}, "AdamW beta1, beta2, each in [0, 1)")
                  .at_least(0)
                  .below(1)
                  .exact_length(2));
  s.push_back(num_key("optim.eps", 1e-8, "AdamW epsilon").greater_than(0));
  s.push_back(num_key("optim.weight_decay", 0.1, "decoupled weight decay").at_least(0));
  s.push_back(num_key("optim.grad_clip", 1.0, "global gradient-norm clip (0 = off)").at_least(0));
  s.push_back(choice_key("optim.schedule", "cosine", {"constant", "cosine"},
                         "constant | cosine (with warmup_steps and min_lr)"));
  s.push_back(int_key("optim.warmup_steps", 100, "linear warm-up steps").at_least(0));
  s.push_back(num_key("optim.min_lr", 1e-4, "cosine: final learning rate").at_least(0));
  s.push_back(param_groups_key("optim.param_groups",
                               "ordered groups; the first whose globs match a parameter takes it (`*` matches across "
                               "dots). Each: name, match (required), then any of lr | lr_scale, weight_decay, "
                               "freeze_steps")
                  .with_example("  - name: gates\n"
                                "    match: [\"*.attn.gate.*\", \"*.attn.router.*\"]\n"
                                "    lr_scale: 2.0              # times the schedule's lr (or lr: an absolute rate)\n"
                                "    weight_decay: 0.0\n"
                                "    freeze_steps: 100          # unchanged (moments too) during steps 0 … 99"));

  s.push_back(num_key("regularization.gate_entropy", 0.0,
                      "weight of the gate binary entropy (> 0 pushes gates to 0/1, < 0 towards 1/2; needs a gate)"));
  s.push_back(num_key("regularization.gate_l1", 0.0,
                      "weight of the mean gate value (> 0 pushes gates towards 0: sparsity; needs a gate)")
                  .at_least(0));
  s.push_back(num_key("regularization.attn_entropy", 0.0,
                      "weight of the attention entropy (> 0 sharpens the attention, < 0 spreads it)"));
  s.push_back(num_key("regularization.router_balance", 0.0,
                      "weight of the routed gate's load-balance loss (needs a gate that routes)")
                  .at_least(0));

  s.push_back(int_key("dist.zero", 0, "1 = shard optimizer state across ranks (ZeRO-1)").at_least(0).at_most(1));
  s.push_back(
      num_key("dist.timeout_s", 300.0, "seconds a collective waits for the other ranks before the run fails (exit 3)")
          .greater_than(0));
  s.push_back(choice_key("dist.backend", "auto", {"auto", "nccl", "mpi"},
                         "GPUs: nccl (a GPU per rank) | mpi (staged through host memory; ranks may share a GPU) | "
                         "auto (nccl where each rank has its own GPU)"));
  s.push_back(choice_key("dist.grad_dtype", "f32", {"f32", "bf16"},
                         "dist.zero 0's gradient buckets on the wire: f32 | bf16 (half the traffic)"));
  s.push_back(num_key("dist.bucket_mb", 25.0, "MiB per gradient bucket, all-reduced as soon as its gradients are ready")
                  .greater_than(0));
  return s;
}

}  // namespace

const config::Schema& run_schema() {
  static const config::Schema schema(run_keys());
  return schema;
}

}  // namespace gattn
