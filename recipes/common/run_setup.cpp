// Run preparation, evaluation, checkpoint metadata and sampling shared by the recipes.
#include "recipes/common/run_setup.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "core/autograd/grad_mode.h"
#include "core/cuda/device.h"
#include "framework/config/errors.h"
#include "framework/dist/launch_env.h"
#include "framework/io/checkpoint.h"
#include "framework/io/checkpoint_text.h"
#include "framework/io/errors.h"
#include "framework/io/run_files.h"
#include "framework/io/safetensors.h"
#include "framework/runtime/threads.h"
#include "models/layer_stats_io.h"
#include "models/sampling.h"
#include "ops/cuda/runtime_info.h"
#include "ops/nn_functional.h"
#include "recipes/common/memory_check.h"
#include "recipes/common/stats_reduce.h"

namespace gattn::recipes {

namespace fs = std::filesystem;

DataOptions data_options(const Config& cfg) {
  DataOptions o;
  o.kind = cfg.get_string("data.kind");
  o.path = cfg.get_string("data.path");
  o.task = cfg.get_string("data.task");
  o.tokenizer = cfg.get_string("data.tokenizer");
  // data.vocab_size sizes a synthetic task; token shards (GPT-2's 50,257 ids) are checked against
  // the vocabulary of the model that reads them.
  o.vocab_size = o.kind == "tokens" ? cfg.get_int("model.vocab_size") : cfg.get_int("data.vocab_size");
  o.n_pairs = cfg.get_int("data.n_pairs");
  o.n_distractors = cfg.get_int("data.n_distractors");
  o.seed = static_cast<std::uint64_t>(cfg.get_int("seed"));
  return o;
}

optim::AdamWOptions adamw_options(const Config& cfg) {
  optim::AdamWOptions o;
  o.lr = cfg.get_double("optim.lr");
  std::vector<double> betas = cfg.get_double_list("optim.betas");
  o.beta1 = betas.at(0);
  o.beta2 = betas.at(1);
  o.eps = cfg.get_double("optim.eps");
  o.weight_decay = cfg.get_double("optim.weight_decay");
  o.grad_clip = cfg.get_double("optim.grad_clip");
  o.schedule.kind = cfg.get_string("optim.schedule");
  o.schedule.lr = o.lr;
  o.schedule.warmup_steps = cfg.get_int("optim.warmup_steps");
  o.schedule.min_lr = cfg.get_double("optim.min_lr");
  o.schedule.max_steps = cfg.get_int("train.max_steps");
  o.groups = cfg.param_groups();
  return o;
}

Device resolve_device(const Config& cfg) {
  const std::string device = cfg.get_string("device");
  const bool gpu = cuda::compiled_in() && cuda::available();
  if (device == "cuda" && !gpu) {
    std::string why = cuda::compiled_in() ? "no CUDA device is visible" : "this build has no CUDA (nvcc was not found)";
    throw ConfigError(cfg.where("device") + ": device 'cuda': " + why + "; use cpu or auto");
  }
  if (device == "cuda" || (device == "auto" && gpu)) {
    // A launched rank drives the GPU of its local rank (ranks beyond the node's GPUs share them
    // round-robin, which only the staged MPI backend allows), chosen before any CUDA work.
    const dist::LaunchInfo launch = dist::detect_launch();
    if (launch.launched) cuda::use_device(launch.local_rank % cuda::device_count());
    return Device::cuda;
  }
  return Device::cpu;
}

ops::ComputePrecision resolve_precision(const Config& cfg, Device device) {
  const std::string precision = cfg.get_string("train.precision");
  if (precision == "fp32") return ops::ComputePrecision::fp32;
  // bf16 is mixed precision on tensor cores; the CPU kernels compute in f32/f64 only, and training
  // silently in fp32 under a bf16 config would mislabel every number the run reports.
  if (device != Device::cuda)
    throw ConfigError(cfg.where("train.precision") +
                      ": train.precision 'bf16' needs device cuda (the CPU kernels compute "
                      "in f32); use fp32 on the CPU");
  return ops::ComputePrecision::bf16;
}

void apply_thread_setting(const Config& cfg) {
  const std::int64_t requested = cfg.get_int("train.threads");
  const ThreadCount count = resolve_thread_count(requested);
  if (count.clamped)
    std::cerr << "gattn: train.threads " << requested << " is more than the " << count.threads
              << " cores this process may use; using " << count.threads << "\n";
  const std::string why = probe_thread_start(count.threads);
  if (!why.empty())
    throw ConfigError(cfg.where("train.threads") + ": train.threads " + std::to_string(requested) + ": " + why +
                      " (a memory or process limit?); set train.threads lower");
  set_num_threads(count.threads);
}

RunSetup prepare_run(const std::string& config_path, const std::vector<std::string>& overrides, bool resuming) {
  Config cfg = Config::load(config_path, overrides);
  const Device device = resolve_device(cfg);
  const ops::ComputePrecision precision = resolve_precision(cfg, device);
  apply_thread_setting(cfg);
  check_model_memory(cfg, ModelUse::train, device);  // before the data: a synthetic task sizes itself by the block

  RunSetup run{std::move(cfg), "", nullptr, nullptr, nullptr, device, precision};
  models::ModelConfig mc = run.config.model_config();
  run.data = make_dataset(data_options(run.config), mc.block_size);
  check_arch_fits_data(run.config, *run.data);
  const std::int64_t data_vocab = run.data->vocab_size();
  if (mc.vocab_size == 0) {
    mc.vocab_size = data_vocab;
    // Record the vocabulary the run really uses in the resolved config: the same file and overrides
    // plus one more, so every other key still names the line (or override) that set it.
    std::vector<std::string> with_vocab = overrides;
    with_vocab.push_back("model.vocab_size=" + std::to_string(data_vocab));
    run.config = Config::load(config_path, with_vocab);
  } else if (mc.vocab_size < data_vocab) {
    throw ConfigError(run.config.where("model.vocab_size") + ": model.vocab_size " + std::to_string(mc.vocab_size) +
                      " is smaller than the data's vocabulary (" + std::to_string(data_vocab) + " tokens)");
  }
  mc.validate();
  check_model_memory(run.config, ModelUse::train, device);  // again, with the data's vocabulary
  run.model = std::make_unique<models::GPT>(mc, static_cast<std::uint64_t>(run.config.get_int("seed")));

  run.dir = run.config.run_dir();
  check_run_directory(run.dir, "run.dir");  // new, empty or a gattn run: never a folder of other files
  if (!resuming && (fs::exists(fs::path(run.dir) / "metrics.jsonl") || fs::exists(fs::path(run.dir) / "checkpoints")))
    throw ConfigError("run.dir: " + run.dir +
                      " already holds a run; continue it with --resume auto, or choose another run.name or run.dir");
  return run;
}

void start_run_directory(RunSetup& run) {
  std::error_code ec;
  fs::create_directories(run.dir, ec);
  if (ec) throw CheckpointError("cannot create the run directory " + run.dir + ": " + ec.message());
  run.lock = std::make_unique<RunDirectoryLock>(run.dir);
  write_file_atomically((fs::path(run.dir) / "config.yaml").string(), run.config.to_yaml());
  // The tokenizer of token shards beside the config, so the run directory says how to read its
  // tokens (its checkpoints carry it too).
  if (auto tokenizer = run.data->tokenizer())
    write_file_atomically((fs::path(run.dir) / kTokenizerModelFile).string(), tokenizer->serialized());
}

void check_arch_fits_data(const Config& cfg, const Dataset& data) {
  const bool encoder_decoder = cfg.get_string("model.arch") == models::kArchEncoderDecoder;
  if (encoder_decoder == data.seq2seq()) return;
  const std::string kind = cfg.get_string("data.kind");
  const std::string what = kind == "synthetic" ? "data.task " + cfg.get_string("data.task") : "data.kind " + kind;
  if (encoder_decoder)
    throw ConfigError(cfg.where("model.arch") +
                      ": model.arch encoder_decoder needs sequence-to-sequence data (data.kind pairs, or data.task "
                      "reverse, sort or noisy_copy), got " +
                      what);
  throw ConfigError(cfg.where("model.arch") + ": " + what +
                    " is sequence-to-sequence data (a source and a target): it needs model.arch encoder_decoder");
}

EvalResult evaluate(models::GPT& model, const Dataset& data, const Config& cfg, std::int64_t batch_size,
                    dist::Communicator* comm) {
  const int world = comm ? comm->size() : 1, rank = comm ? comm->rank() : 0;
  NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  const std::int64_t T = model.config().block_size;
  const bool encoder_decoder = model.config().encoder_decoder();
  const Device device = model.parameters().front().device();  // batches go where the model is
  // On the GPU, evaluated in the precision the run trains in, so val loss measures the model as
  // trained; elsewhere (`gattn eval` of a bf16 run's checkpoint on a CPU) in f32.
  const bool bf16 = device == Device::cuda && cfg.get_string("train.precision") == "bf16";
  const ops::AutocastScope autocast(bf16 ? ops::ComputePrecision::bf16 : ops::ComputePrecision::fp32);
  const std::int64_t windows = data.eval_windows(T, cfg.get_int("eval.max_windows"));
  // correct: Σ answer accuracy · tokens, or for seq2seq the sequences exactly right.
  double loss_sum = 0, correct = 0, bytes = 0;
  std::int64_t tokens = 0, sequences = 0;
  const std::shared_ptr<const TextCodec> codec = data.text_codec();
  const std::vector<std::int32_t> byte_lengths = codec ? token_byte_lengths(*codec) : std::vector<std::int32_t>{};
  std::int64_t batch_index = 0;
  models::ForwardOptions fo;
  // The val gate statistics, and an encoder–decoder's attention entropies: a by-product of the forward.
  fo.collect_stats = model.config().has_gates() || encoder_decoder;
  ForwardStats stats;
  for (std::int64_t first = 0; first < windows; first += batch_size) {
    if (batch_index++ % world != rank) continue;
    const std::int64_t count = std::min(batch_size, windows - first);
    Batch batch = data.eval_batch(first, count, T);
    if (encoder_decoder) fo.source = batch.source.to(device);
    models::ForwardResult r = model.forward(batch.x.to(device), batch.y.to(device), fo);
    stats.merge({std::move(r.stats), std::move(r.cross_stats), std::move(r.encoder_stats)});
    std::int64_t n = 0;
    for (double t : batch.y.to_vector()) {
      n += t >= 0;
      if (t >= 0 && t < static_cast<double>(byte_lengths.size())) bytes += byte_lengths[static_cast<std::size_t>(t)];
    }
    loss_sum += r.loss.item() * static_cast<double>(n);
    if (data.seq2seq()) {
      const Dataset::ExactMatch m = Dataset::exact_match_counts(r.logits.to(Device::cpu), batch);
      correct += static_cast<double>(m.right);
      sequences += m.rows;
    } else if (data.reports_accuracy()) {
      correct += Dataset::answer_accuracy(r.logits.to(Device::cpu), batch) * static_cast<double>(n);
    }
    tokens += n;
  }
  model.train(was_training);
  if (world > 1) {
    const std::vector<double> sums =
        comm->all_reduce_host({loss_sum, correct, static_cast<double>(tokens), bytes, static_cast<double>(sequences)},
                              dist::ReduceOp::sum, "all-reduce of the eval sums");
    loss_sum = sums[0];
    correct = sums[1];
    tokens = static_cast<std::int64_t>(sums[2]);
    bytes = sums[3];
    sequences = static_cast<std::int64_t>(sums[4]);
    if (fo.collect_stats) all_reduce_stats(*comm, stats, model.config(), "all-reduce of the eval statistics");
  }
  EvalResult e;
  e.stats = std::move(stats.stats);
  e.cross_stats = std::move(stats.cross);
  e.encoder_stats = std::move(stats.encoder);
  e.cross_attn_entropy = mean_attn_entropy(e.cross_stats);
  e.encoder_attn_entropy = mean_attn_entropy(e.encoder_stats);
  e.tokens = tokens;
  e.loss = tokens ? loss_sum / static_cast<double>(tokens) : 0.0;
  e.seq2seq = data.seq2seq();
  e.sequences = sequences;
  if (e.seq2seq)
    e.accuracy = sequences ? correct / static_cast<double>(sequences) : 0.0;
  else if (data.reports_accuracy())
    e.accuracy = tokens ? correct / static_cast<double>(tokens) : 0.0;
  if (codec && bytes > 0) e.bits_per_byte = loss_sum / bytes / std::log(2.0);
  return e;
}

std::string format_eval(std::int64_t step, const EvalResult& e) {
  char buf[160];
  if (e.accuracy && e.seq2seq)
    std::snprintf(buf, sizeof buf, "eval at step %lld: val loss %.4f, exact match %.1f%% (%lld sequences)",
                  static_cast<long long>(step), e.loss, 100.0 * *e.accuracy, static_cast<long long>(e.sequences));
  else if (e.accuracy)
    std::snprintf(buf, sizeof buf, "eval at step %lld: val loss %.4f, answer accuracy %.1f%% (%lld answers)",
                  static_cast<long long>(step), e.loss, 100.0 * *e.accuracy, static_cast<long long>(e.tokens));
  else
    std::snprintf(buf, sizeof buf, "eval at step %lld: val loss %.4f (%lld tokens)", static_cast<long long>(step),
                  e.loss, static_cast<long long>(e.tokens));
  std::string out = buf;
  nlohmann::json gates;
  models::add_val_gate_stats(gates, e.stats);
  if (gates.contains("val_gate_mean")) {
    std::snprintf(buf, sizeof buf, ", val gate mean %.3f (std %.3f)", gates["val_gate_mean"].get<double>(),
                  gates["val_gate_std"].get<double>());
    out += buf;
  }
  if (e.cross_attn_entropy) {
    std::snprintf(buf, sizeof buf, ", cross-attn entropy %.3f", *e.cross_attn_entropy);
    out += buf;
  }
  if (e.bits_per_byte) {
    std::snprintf(buf, sizeof buf, ", %.4f bits/byte", *e.bits_per_byte);
    out += buf;
  }
  return out;
}

void add_eval_fields(nlohmann::json& line, const EvalResult& e) {
  line["loss"] = e.loss;
  if (e.accuracy) line["accuracy"] = *e.accuracy;
  if (e.bits_per_byte) line["bits_per_byte"] = *e.bits_per_byte;
  if (e.cross_attn_entropy) line["cross_attn_entropy"] = *e.cross_attn_entropy;
  if (e.encoder_attn_entropy) line["encoder_attn_entropy"] = *e.encoder_attn_entropy;
  models::add_val_gate_stats(line, e.stats);
  add_encoder_gate_stats(line, e.encoder_stats, "val_");
}

CheckpointWritten save_checkpoint_directory(const RunSetup& run, const OptimizerSnapshot& optimizer,
                                            const std::vector<std::pair<std::string, double>>& lrs, TrainState state) {
  std::map<std::string, std::string> meta{{"format", kCheckpointFormat}, {"config", run.config.to_json().dump()}};
  if (!run.data->vocab_json().empty()) meta["vocab"] = run.data->vocab_json();
  if (auto tokenizer = run.data->tokenizer()) add_tokenizer_metadata(meta, *tokenizer);
  state.config = run.config.to_json();
  state.config_hash = config_hash(state.config);
  state.lr.clear();
  if (state.step > 0)
    for (const auto& [group, lr] : lrs) state.lr[group] = lr;
  return write_checkpoint_directory(run.dir, *run.model, optimizer, meta, state);
}

void publish_checkpoint(const RunSetup& run, std::int64_t step) {
  gattn::publish_checkpoint(run.dir, step);
  prune_checkpoints(run.dir, step, run.config.get_int("checkpoint.keep_last"),
                    run.config.get_int("checkpoint.keep_every"));
}

std::string sample_text(models::GPT& model, const Dataset& data, const Config& cfg, std::int64_t n) {
  const std::shared_ptr<const TextCodec> codec = data.text_codec();
  if (!codec) return "";
  // generate() runs the eval-mode math whatever the model's mode: no mode switch needed.
  models::SamplingOptions options;
  options.temperature = 0.8;
  options.seed = static_cast<std::uint64_t>(cfg.get_int("seed"));
  return codec->decode(models::generate(model, {codec->start_token()}, n, options));
}

std::string sample_target(models::GPT& model, const Dataset& data) {
  const Batch first = data.eval_batch(0, 1, model.config().block_size);
  const std::vector<std::int32_t> source = row_ids_until(first.source, 0, is_seq2seq_pad);
  const std::vector<std::int32_t> expected =
      row_ids_until(first.y, 0, [](std::int32_t t) { return t < 0 || t == kSeq2SeqEnd; });
  models::SamplingOptions greedy;  // the model's best guess: what exact match measures
  greedy.temperature = 0;
  const std::vector<std::int32_t> output = models::generate_target(model, source, model.config().block_size, greedy);
  const std::shared_ptr<const TextCodec> codec = data.text_codec();
  const auto show = [&](const std::vector<std::int32_t>& ids) {
    if (codec) return codec->decode(ids);
    std::string out;
    for (std::int32_t id : ids) out.append(out.empty() ? "" : " ").append(std::to_string(id));
    return out;
  };
  return show(source) + " → " + show(output) + " (expected " + show(expected) + ")";
}

}  // namespace gattn::recipes
