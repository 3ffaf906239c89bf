// `gattn inspect --checkpoint DIR`: the checkpoint's tensors, shapes, config, and the gate
// statistics of the model on a sample text (docs/cli.md); for an encoder–decoder on a source–target
// pair, with tables for the cross-attention and the encoder too.
#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <tuple>

#include "core/autograd/grad_mode.h"
#include "framework/base/input_file.h"
#include "framework/data/dataset.h"
#include "framework/io/checkpoint.h"
#include "framework/io/checkpoint_text.h"
#include "framework/io/checkpoint_verify.h"
#include "framework/io/checksums.h"
#include "framework/io/module_io.h"
#include "framework/io/safetensors.h"
#include "framework/io/train_state.h"
#include "models/gpt.h"
#include "recipes/common/checkpoint_model.h"
#include "recipes/common/gate_token_classes.h"
#include "recipes/common/recipe.h"
#include "recipes/common/run_setup.h"

namespace gattn::recipes {

namespace {

struct InspectArgs {
  std::string checkpoint;
  std::int64_t sample_tokens = 0;  // 0: the model's block size
  std::int64_t windows = 16;       // val windows of the gate-by-token-class table
};

// Mean and standard deviation of a tensor's values, for the tensor listing.
std::pair<double, double> moments(const Tensor& t) {
  std::vector<double> v = t.to_vector();
  if (v.empty()) return {0, 0};
  double s = 0, s2 = 0;
  for (double x : v) {
    s += x;
    s2 += x * x;
  }
  double m = s / static_cast<double>(v.size());
  return {m, std::sqrt(std::max(0.0, s2 / static_cast<double>(v.size()) - m * m))};
}

// The sample the statistics are measured on: the start of the validation split of the run's text
// when the config names a readable text file and the checkpoint has its vocabulary, else a fixed
// pseudo-random token sequence (Philox seed 0).
std::pair<Tensor, std::string> sample_tokens(const nlohmann::json& config,
                                             const std::map<std::string, std::string>& meta, std::int64_t vocab_size,
                                             std::int64_t n) {
  Tensor idx = Tensor::empty({1, n}, DType::i32);
  auto vocab_it = meta.find("vocab");
  if (vocab_it != meta.end() && config.contains("data") && config["data"].value("kind", "") == "text") {
    std::string path = config["data"].value("path", "");
    std::string text;  // stays empty when the file cannot be read (a FIFO or device is not waited on)
    const bool readable = read_whole_file(path, kNoSizeLimit, text).empty();
    nlohmann::json vocab = nlohmann::json::parse(vocab_it->second, nullptr, false);
    if (readable && vocab.is_array()) {
      std::array<int, 256> id{};
      id.fill(-1);
      for (std::size_t t = 0; t < vocab.size(); ++t)
        if (vocab[t].is_number_integer() && vocab[t].get<int>() >= 0 && vocab[t].get<int>() < 256)
          id[vocab[t].get<int>()] = static_cast<int>(t);
      std::size_t start = text.size() * 9 / 10;
      if (text.size() >= start + static_cast<std::size_t>(n)) {
        bool ok = true;
        for (std::int64_t i = 0; i < n && ok; ++i) {
          int t = id[static_cast<unsigned char>(text[start + static_cast<std::size_t>(i)])];
          ok = t >= 0;
          idx.data<std::int32_t>()[i] = t;
        }
        if (ok) return {idx, "the first " + std::to_string(n) + " tokens of the validation split of " + path};
      }
    }
  }
  Generator gen(0);
  gen.randint_(idx, vocab_size);
  return {idx, std::to_string(n) + " pseudo-random tokens (Philox seed 0)"};
}

// An encoder–decoder's sample: the first validation pair of the run's data (its source and the
// decoder's input), or where the data is not at hand (a pairs file elsewhere) a pseudo-random source
// of n content tokens and a decoder input of the start token and n − 1 of them (Philox seed 0).
std::pair<Batch, std::string> sample_pair(const std::string& config_text, const models::ModelConfig& mc,
                                          std::int64_t n) {
  try {
    const Config cfg = Config::from_string(config_text, {}, "config metadata");
    const std::unique_ptr<Dataset> data = make_dataset(data_options(cfg), mc.block_size);
    if (data->seq2seq()) {
      Batch b = data->eval_batch(0, 1, mc.block_size);
      return {b, "the first validation pair of the run's data (" + std::to_string(b.source.size(1)) + " source and " +
                     std::to_string(b.x.size(1)) + " target positions)"};
    }
  } catch (const Error&) {
    // The data cannot be read here (a moved pairs file): pseudo-random tokens instead.
  }
  Generator gen(0);
  const std::int64_t content = std::max<std::int64_t>(1, mc.vocab_size - kSeq2SeqFirstContent);
  Batch b;
  b.source = Tensor::empty({1, n}, DType::i32);
  b.x = Tensor::empty({1, n}, DType::i32);
  gen.randint_(b.source, content);
  gen.randint_(b.x, content);
  std::int32_t* src = b.source.data<std::int32_t>();
  std::int32_t* x = b.x.data<std::int32_t>();
  for (std::int64_t i = 0; i < n; ++i) {
    src[i] += static_cast<std::int32_t>(kSeq2SeqFirstContent);
    x[i] += static_cast<std::int32_t>(kSeq2SeqFirstContent);
  }
  x[0] = kSeq2SeqStart;
  return {b, "a pseudo-random source and target of " + std::to_string(n) + " tokens each (Philox seed 0)"};
}

// One row per layer: gate moments (or "-"), the attention's entropy and sink ratio and act_max (max |x|
// of the residual stream after the block), then the
// per-head gate means where a layer reports them. `title` heads the table when not empty.
void print_layer_table(const std::string& title, const std::vector<models::LayerStats>& stats) {
  if (!title.empty()) std::cout << "  " << title << ":\n";
  std::cout << "  layer  gate_mean  gate_std  frac<0.1  frac>0.9  attn_entropy  sink_ratio     act_max\n";
  for (std::size_t l = 0; l < stats.size(); ++l) {
    const auto& s = stats[l];
    std::cout << "  " << std::setw(5) << l << std::fixed << std::setprecision(4);
    if (s.gate.count > 0)
      std::cout << "  " << std::setw(9) << s.gate.mean() << "  " << std::setw(8) << s.gate.std() << "  " << std::setw(8)
                << s.gate.frac_below_0_1() << "  " << std::setw(8) << s.gate.frac_above_0_9();
    else
      std::cout << "  " << std::setw(9) << "-"
                << "  " << std::setw(8) << "-"
                << "  " << std::setw(8) << "-"
                << "  " << std::setw(8) << "-";
    std::cout << "  " << std::setw(12) << s.attn_entropy() << "  " << std::setw(10) << s.sink_ratio() << "  "
              << std::setw(10) << s.act_max << "\n";
    std::cout << std::defaultfloat << std::setprecision(6);
  }
  // Per head, where a layer's gates report per-head values.
  bool by_head = false;
  for (const auto& s : stats) by_head = by_head || !s.gate_by_head.empty();
  if (!by_head) return;
  std::cout << "  gate_mean by head:\n";
  for (std::size_t l = 0; l < stats.size(); ++l) {
    if (stats[l].gate_by_head.empty()) continue;
    std::cout << "  " << std::setw(5) << l << std::fixed << std::setprecision(4);
    for (const ops::GateMoments& h : stats[l].gate_by_head) {
      std::cout << "  ";
      if (h.count > 0)
        std::cout << h.mean();
      else
        std::cout << "-";
    }
    std::cout << "\n" << std::defaultfloat << std::setprecision(6);
  }
}

// state.json and optimizer.safetensors, when the checkpoint has them (a `gattn train` checkpoint
// does; weights-only files from other tools do not): where training stood, and the optimizer's
// step counts per group. A damaged file is refused like a damaged model file.
void print_training_state(const std::filesystem::path& dir) {
  const std::filesystem::path state_path = dir / kStateFile, opt_path = dir / kOptimizerFile;
  if (!std::filesystem::exists(state_path)) {
    std::cout << "state: (no " << kStateFile << ": a weights-only checkpoint)\n";
  } else {
    const TrainState st = read_train_state(state_path.string());
    std::cout << "state: step " << st.step << ", world size " << st.world_size << ", trained for " << st.elapsed_s
              << " s, config hash " << st.config_hash << "\n";
    std::cout << "  lr at step " << st.step << ":";
    for (const auto& [group, lr] : st.lr) std::cout << " " << group << " " << lr;
    std::cout << (st.lr.empty() ? " (none)\n" : "\n");
    for (const auto& [name, g] : st.rng)
      std::cout << "  " << (name == kDataRng ? "data position" : "rng " + name) << ": Philox seed " << g.seed
                << ", stream " << g.stream << ", offset " << g.offset << " words\n";
    if (st.bad_steps_in_a_row > 0) std::cout << "  non-finite steps in a row: " << st.bad_steps_in_a_row << "\n";
  }
  if (!std::filesystem::exists(opt_path)) {
    std::cout << "optimizer: (no " << kOptimizerFile << ")\n";
    return;
  }
  SafetensorsFile opt = load_safetensors(opt_path.string());
  verify_checkpoint_file(opt);
  std::int64_t values = 0;
  for (const auto& [name, t] : opt.tensors) values += t.numel();
  std::cout << "optimizer: " << opt.tensors.size() << " moment tensors (" << values << " values), checksums ok\n";
  // Step counts per group: they differ where a group was frozen (freeze_steps).
  const nlohmann::json steps = nlohmann::json::parse(opt.metadata["step_counts"], nullptr, false);
  const nlohmann::json groups = nlohmann::json::parse(opt.metadata["groups"], nullptr, false);
  if (steps.is_object() && groups.is_object()) {
    std::map<std::string, std::pair<std::int64_t, std::int64_t>> range;  // group -> (min t, max t)
    for (const auto& [param, t] : steps.items()) {
      if (!t.is_number_integer()) continue;
      const std::string group =
          groups.contains(param) && groups[param].is_string() ? groups[param].get<std::string>() : "?";
      auto [it, fresh] = range.try_emplace(group, t.get<std::int64_t>(), t.get<std::int64_t>());
      it->second.first = std::min(it->second.first, t.get<std::int64_t>());
      it->second.second = std::max(it->second.second, t.get<std::int64_t>());
    }
    std::cout << "  AdamW step counts:";
    for (const auto& [group, r] : range) {
      std::cout << " " << group << " " << r.first;
      if (r.first != r.second) std::cout << "-" << r.second;
    }
    std::cout << "\n";
  }
}

// The gate's mean by token class over the run's first `windows` val windows (recipes/common/
// gate_token_classes.h). Needs the run's data and text vocabulary; where either is missing the
// table says why instead.
void print_gate_token_classes(const std::string& checkpoint, std::int64_t windows) {
  std::vector<GateTokenClassRow> rows;
  std::string described;
  try {
    CheckpointModel ckpt = load_checkpoint_model(checkpoint, {}, "inspect");
    if (!ckpt.codec) {
      std::cout << "gate by token class: (none: the run's tokens have no text)\n";
      return;
    }
    models::GPT& model = *ckpt.model;
    const std::int64_t T = model.config().block_size;
    const std::unique_ptr<Dataset> data = make_dataset(data_options(ckpt.config), T);
    const std::int64_t count = std::clamp<std::int64_t>(windows, 1, data->eval_windows(T, 0));
    const Batch batch = data->eval_batch(0, count, T);
    NoGradGuard no_grad;
    model.eval();
    models::ForwardOptions fo;
    fo.inspect = true;
    if (model.config().encoder_decoder()) fo.source = batch.source;
    rows = gate_token_classes(model.forward(batch.x, Tensor(), fo), batch, ckpt.codec.get(),
                              model.config().encoder_decoder());
    described = std::to_string(count) + " val window(s)";
  } catch (const Error& e) {
    std::cout << "gate by token class: (none: " << e.what() << ")\n";
    return;
  }
  if (rows.empty()) {
    std::cout << "gate by token class: (none: no gate reports a value per position)\n";
    return;
  }
  std::cout << "gate by token class on " << described
            << " (mean gate, positions counted; view read: the position's own token, next: the token it "
               "predicts):\n"
            << format_gate_token_classes(rows);
}

int run_inspect(const InspectArgs& args) {
  namespace fs = std::filesystem;
  if (args.windows < 1) throw ValueError("--windows must be >= 1, got " + std::to_string(args.windows));
  if (args.sample_tokens < 0)
    throw ValueError("--sample-tokens must be >= 0 (0: the model's block size), got " +
                     std::to_string(args.sample_tokens));
  fs::path model_path = fs::path(args.checkpoint) / "model.safetensors";
  if (!fs::exists(model_path)) throw CheckpointError("inspect: " + model_path.string() + " does not exist");
  SafetensorsFile file = load_safetensors(model_path.string());
  // A weights-only file from another tool (no "format") is listed; a gattn checkpoint is verified
  // as every command verifies it.
  verify_checkpoint_file(file, ForeignFiles::allowed);

  std::cout << "checkpoint: " << args.checkpoint << "\n";
  auto format_it = file.metadata.find("format");
  std::cout << "format: " << (format_it == file.metadata.end() ? "(none)" : format_it->second) << "\n";
  // Where `gattn import` took the weights from (docs/import.md).
  if (auto import_it = file.metadata.find("import"); import_it != file.metadata.end())
    std::cout << "imported: " << printable_name(import_it->second, 400) << "\n";
  if (auto tokenizer = tokenizer_from_metadata(file.metadata, "checkpoint file '" + model_path.string() + "'"))
    std::cout << "tokenizer: " << tokenizer->size() << " pieces, sha256 " << tokenizer->sha256() << "\n";
  std::int64_t total = 0;
  for (const auto& [name, t] : file.tensors) total += t.numel();
  std::cout << "tensors: " << file.tensors.size() << " (" << total << " values)\n";
  for (const auto& [name, t] : file.tensors) {
    auto [m, s] = moments(t);
    std::cout << "  " << std::left << std::setw(36) << name << " " << std::setw(16) << t.str() << " mean "
              << std::setw(11) << m << " std " << s << "\n";
  }
  print_training_state(args.checkpoint);

  auto config_it = file.metadata.find("config");
  if (config_it == file.metadata.end()) {
    std::cout << "config: (none in metadata; no gate statistics)\n";
    return 0;
  }
  nlohmann::json config = nlohmann::json::parse(config_it->second, nullptr, false);
  if (config.is_discarded() || !config.is_object() || !config.contains("model"))
    throw CheckpointError("inspect: " + model_path.string() +
                          ": metadata 'config' is not a JSON object with a 'model' key");
  std::cout << "config: " << config.dump() << "\n";

  // The config comes from the file: one that does not describe a model is damage (exit 3).
  // Read as a run config (like eval): a model.gates entry holds only the keys its user wrote, which
  // the config's defaults complete.
  std::optional<models::GPT> built;
  try {
    built.emplace(Config::from_string(config_it->second, {}, model_path.string() + " (config metadata)").model_config(),
                  0);
  } catch (const Error& e) {
    throw CheckpointError("inspect: " + model_path.string() +
                          ": metadata 'config' does not describe a model: " + e.what());
  }
  models::GPT& model = *built;
  const models::ModelConfig& mc = model.config();
  load_module(file, model);
  try {
    model.set_step(checkpoint_step(args.checkpoint));  // where scheduled gate options stand
  } catch (const CheckpointError&) {
    // inspect reads damaged checkpoints too (print_training_state said what is wrong): step 0.
  }
  model.eval();
  std::cout << "arch: " << mc.arch;
  if (mc.encoder_decoder())
    std::cout << " (encoder blocks " << mc.encoder_layers() << ", decoder blocks " << mc.n_layer << ")";
  std::cout << "\n";
  std::int64_t n = args.sample_tokens > 0 ? std::min(args.sample_tokens, mc.block_size) : mc.block_size;
  NoGradGuard no_grad;
  models::ForwardOptions opts;
  opts.collect_stats = true;
  Tensor idx;
  std::string described;
  if (mc.encoder_decoder()) {
    Batch pair;
    std::tie(pair, described) = sample_pair(config_it->second, mc, n);
    idx = pair.x;
    opts.source = pair.source;
  } else {
    std::tie(idx, described) = sample_tokens(config, file.metadata, mc.vocab_size, n);
  }
  models::ForwardResult r = model.forward(idx, Tensor(), opts);
  std::cout << "gate statistics on " << described << ":\n";
  print_layer_table(mc.encoder_decoder() ? "decoder self-attention" : "", r.stats);
  if (mc.encoder_decoder()) {
    print_layer_table("decoder cross-attention", r.cross_stats);
    print_layer_table("encoder self-attention", r.encoder_stats);
  }
  print_gate_token_classes(args.checkpoint, args.windows);
  return 0;
}

}  // namespace

Action add_inspect(CLI::App& app) {
  auto args = std::make_shared<InspectArgs>();
  CLI::App* cmd = app.add_subcommand("inspect", "print a checkpoint's tensors, shapes, config and gate statistics");
  cmd->add_option("--checkpoint", args->checkpoint, "checkpoint directory (holds model.safetensors)")->required();
  cmd->add_option("--sample-tokens", args->sample_tokens, "tokens of the statistics sample (default: block size)");
  cmd->add_option("--windows", args->windows, "val windows of the gate-by-token-class table")->capture_default_str();
  return [args] { return run_inspect(*args); };
}

}  // namespace gattn::recipes
