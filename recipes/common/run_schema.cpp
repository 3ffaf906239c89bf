// One line per key. A model.gate.<key> shorthand key's default must be its gate kind's registered
// default (tests/unit/test_gate_registry.cpp checks it).
#include "recipes/common/run_schema.h"

#include <optional>

namespace gattn {

namespace {

using namespace config;

std::vector<KeySpec> run_keys() {
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
  s.push_back(choice_key("model.position", "learned", {"learned", "rope"},
                         "positions: learned (the table wpe.weight) or rope (q, k rotated per head; no wpe)"));
  s.push_back(choice_key("model.arch", "decoder", {"decoder", "encoder_decoder"},
                         "decoder (GPT) or encoder_decoder (a bidirectional encoder, cross-attention in the decoder)"));
  s.push_back(int_key("model.n_encoder_layer", 0, 0.0, "encoder_decoder: encoder blocks (0 = model.n_layer)"));
  s.push_back(str_key("model.gate.kind", "none",
                      "the gate kind: none or a registered kind (`gattn gates` lists them; docs/gates.md)"));
  s.push_back(choice_key("model.gate.granularity", "elementwise", {"elementwise", "headwise"},
                         "output and context gates: one value per channel or per head"));
  s.push_back(all_or_int_list_key("model.gate.layers", "block indices", 0.0,
                                  "blocks with a gate: all or a list of block indices"));
  s.push_back(choice_key("model.gate.where", "self", {"self", "encoder", "cross"},
                         "the attention gated: self, or in an encoder_decoder the encoder's or the cross-attention"));
  s.push_back(choice_key("model.gate.activation", "sigmoid",
                         {"sigmoid", "gumbel_sigmoid", "softplus", "tanh_magnitude"},
                         "gate nonlinearity (gumbel_sigmoid adds logistic noise while training; softplus and "
                         "tanh_magnitude for gates that multiply: input, output, context)"));
  s.push_back(num_key("model.gate.temperature", 1.0, 0.0, true, "τ: the gate is act(z/τ) (the start of a schedule)"));
  s.push_back(nullable(num_key("model.gate.temperature_final", std::nullopt, 0.0, true,
                               "τ after temperature_steps steps (null = temperature)")));
  s.push_back(int_key("model.gate.temperature_steps", 0, 0.0, "steps over which τ goes linearly to temperature_final"));
  s.push_back(bool_key("model.gate.hard", false, "forward 1[g > hard_threshold], backward the soft gradient"));
  s.push_back(num_key("model.gate.hard_threshold", 0.5, std::nullopt, false, "the hard gate's threshold"));
  s.push_back(pos_int("model.gate.groups", 1, "consecutive heads sharing one gate (divides n_head)"));
  s.push_back(all_or_int_list_key("model.gate.heads", "head indices", 0.0, "heads with a gate: all or a list"));
  s.push_back(bool_key("model.gate.input_norm", false, "LayerNorm (no affine) on the gate's input"));
  s.push_back(at_most(
      num_key("model.gate.dropout", 0.0, 0.0, false, "while training, probability that a gate value is replaced by 1"),
      1.0, true));
  s.push_back(int_key("model.gate.ramp_start", 0, 0.0, "step from which the gate's effect ramps in"));
  s.push_back(int_key("model.gate.ramp_steps", 0, 0.0, "steps of the ramp (0 = none)"));
  s.push_back(choice_key("model.gate.form", "additive", {"additive", "multiplicative"},
                         "score: S + log g (additive) or S ⊙ g (multiplicative)"));
  s.push_back(choice_key("model.gate.source", "key", {"key", "query_key"},
                         "score: the gate of the key, or of the query and the key (multiplicative)"));
  s.push_back(bool_key("model.gate.shared_projection", false, "pair: one projection w for q and k"));
  s.push_back(nullable(num_key("model.gate.init_bias", std::nullopt, std::nullopt, false,
                               "initial gate bias (null = the kind's default: 3 for forget, else 0)")));
  s.push_back(choice_key("model.gate.init_weight", "normal", {"zero", "normal"},
                         "initial gate weights: zero or normal (std init_std)"));
  s.push_back(num_key("model.gate.init_std", 0.02, 0.0, true, "standard deviation of the normal initial gate weights"));
  s.push_back(int_list_key("model.gate.windows", {0, 32}, 0.0, "routed: expert attention spans (0 = full causal)"));
  s.push_back(int_key("model.gate.top_k", 1, 1.0, "routed: experts per token"));
  s.push_back(at_most(num_key("model.gate.alpha_init", 0.5, 0.0, true, "pair: the initial α in (0, 1)"), 1.0, true));
  s.push_back(
      map_list_key("model.gates", "gate entries", "{kind: ..., ...}",
                   "several gates: a list of entries with the keys of model.gate (not together with model.gate)"));

  s.push_back(choice_key("data.kind", "synthetic", {"text", "tokens", "synthetic", "pairs"},
                         "text (UTF-8 file, char-level), tokens (llm.c .bin shards), synthetic or pairs "
                         "(source<TAB>target lines for an encoder-decoder)"));
  s.push_back(str_key("data.path", "", "the text file, token shard(s) or pairs file (text, tokens and pairs)"));
  s.push_back(str_key("data.tokenizer", "",
                      "pairs: a `gattn tokenize train` directory to encode them with (empty = byte-level)"));
  s.push_back(choice_key("data.task", "copy", {"copy", "assoc_recall", "noisy_recall", "reverse", "sort", "noisy_copy"},
                         "synthetic task (reverse, sort and noisy_copy are seq2seq)"));
  s.push_back(pos_int("data.vocab_size", 32, "synthetic: vocabulary size"));
  s.push_back(int_key("data.n_pairs", 4, 0.0, "synthetic: key-value pairs (recall) or tokens per source (others)"));
  s.push_back(int_key("data.n_distractors", 0, 0.0, "synthetic: distractor tokens per sequence"));

  s.push_back(pos_int("train.batch_size", 12, "per-rank micro-batch size"));
  s.push_back(pos_int("train.max_steps", 2000, "optimizer steps"));
  s.push_back(int_key("train.grad_accum", 1, 1.0, "micro-batches per optimizer step"));
  s.push_back(int_key("train.log_every", 10, 1.0, "steps between train log lines"));
  s.push_back(int_key("train.threads", 0, 0.0, "CPU threads (0 = all cores)"));
  s.push_back(choice_key("train.parallel", "auto", {"auto", "rows", "ops"},
                         "how CPU threads share a step: rows (each thread one part of the batch), ops (each op "
                         "split over the threads), auto (rows when the threads divide batch_size on the CPU)"));
  s.push_back(choice_key("train.precision", "fp32", {"fp32", "bf16"}, "compute precision"));
  s.push_back(int_key("train.max_bad_steps", 3, 1.0, "consecutive NaN/Inf steps skipped before the run fails"));

  s.push_back(int_key("eval.every", 250, 0.0, "steps between evals (0 = only at the end)"));
  s.push_back(int_key("eval.max_windows", 200, 0.0, "val windows per eval (0 = all)"));

  s.push_back(int_key("checkpoint.every", 500, 0.0, "steps between checkpoints (0 = only the final one)"));
  s.push_back(int_key("checkpoint.keep_last", 3, 0.0, "newest checkpoints kept (0 = keep all)"));
  s.push_back(int_key("checkpoint.keep_every", 0, 0.0, "also keep checkpoints at multiples of this step (0 = none)"));

  s.push_back(num_key("optim.lr", 1e-3, 0.0, true, "peak learning rate"));
  s.push_back(with_length(at_most(num_list_key("optim.betas", {0.9, 0.99}, 0.0, "AdamW beta1, beta2"), 1.0, true), 2));
  s.push_back(num_key("optim.eps", 1e-8, 0.0, true, "AdamW epsilon"));
  s.push_back(num_key("optim.weight_decay", 0.1, 0.0, false, "decoupled weight decay"));
  s.push_back(num_key("optim.grad_clip", 1.0, 0.0, false, "global gradient-norm clip (0 = off)"));
  s.push_back(choice_key("optim.schedule", "cosine", {"constant", "cosine"}, "learning-rate schedule"));
  s.push_back(int_key("optim.warmup_steps", 100, 0.0, "linear warm-up steps"));
  s.push_back(num_key("optim.min_lr", 1e-4, 0.0, false, "cosine: final learning rate"));
  s.push_back(param_groups_key("optim.param_groups",
                               "ordered groups {name, match, lr | lr_scale, weight_decay, freeze_steps}"));

  s.push_back(num_key("regularization.gate_entropy", 0.0, std::nullopt, false,
                      "weight of the gate binary entropy (> 0 pushes gates to 0/1)"));
  s.push_back(num_key("regularization.gate_l1", 0.0, std::nullopt, false,
                      "weight of the mean gate value (> 0 pushes gates towards 0: sparsity)"));
  s.push_back(num_key("regularization.attn_entropy", 0.0, std::nullopt, false, "weight of the attention entropy"));
  s.push_back(num_key("regularization.router_balance", 0.0, std::nullopt, false,
                      "weight of the routed gate's load-balance loss"));
  s.push_back(at_most(int_key("dist.zero", 0, 0.0, "1 = shard optimizer state across ranks (ZeRO-1)"), 1.0));
  s.push_back(num_key("dist.timeout_s", 300.0, 0.0, true,
                      "seconds a collective waits for the other ranks before the run fails (a rank died or stalled)"));
  s.push_back(choice_key("dist.backend", "auto", {"auto", "nccl", "mpi"},
                         "gradients on GPUs: nccl (a GPU per rank), mpi (staged through host memory; ranks may "
                         "share a GPU) or auto (nccl where each rank has its own GPU)"));
  s.push_back(choice_key("dist.grad_dtype", "f32", {"f32", "bf16"},
                         "dist.zero 0's gradient buckets on the wire: f32, or bf16 (half the traffic)"));
  s.push_back(num_key("dist.bucket_mb", 25.0, 0.0, true,
                      "MiB per gradient bucket (dist.zero 0): each is all-reduced once its gradients are ready"));
  return s;
}

}  // namespace

const config::Schema& run_schema() {
  static const config::Schema schema(run_keys());
  return schema;
}

}  // namespace gattn
