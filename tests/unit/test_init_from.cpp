// train.init_from (recipes/common/init_from.h): a model that adds gates to a trained one computes the
// trained one's function at step 0, for every gate kind; the checkpoint's settings are inherited;
// what may not change is refused naming the key or the tensor.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "framework/config/errors.h"
#include "framework/io/errors.h"
#include "framework/io/module_io.h"
#include "framework/io/safetensors.h"
#include "models/gating/options.h"
#include "models/gating/registry.h"
#include "recipes/common/init_from.h"
#include "recipes/common/run_setup.h"

namespace gattn {

namespace {

namespace fs = std::filesystem;

// A small trained-looking model: random weights (not the initialisation's zeros and ones) written as
// a checkpoint with its config, as the trainer writes one.
const std::string kSource = R"(
seed: 7
data: {kind: synthetic, task: assoc_recall, vocab_size: 24, n_pairs: 3}
model: {vocab_size: 24, block_size: 16, n_layer: 2, n_head: 2, n_embd: 16}
)";

struct Dir {
  fs::path path;
  Dir() : path(fs::temp_directory_path() / ("gattn_init_from_" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Dir() { fs::remove_all(path); }
};

// Writes `yaml`'s model with weights drawn from N(0, 0.3²) as DIR/model.safetensors.
void write_checkpoint(const fs::path& dir, const std::string& yaml, std::uint64_t seed = 3) {
  const Config cfg = Config::from_string(yaml);
  models::GPT model(cfg.model_config(), seed);
  Generator g(seed, 99);
  model.visit_parameters([&](const std::string&, Tensor& p) { g.normal_(p, 0.0, 0.3); });
  fs::create_directories(dir);
  save_module((dir / "model.safetensors").string(), model,
              {{"format", kCheckpointFormat}, {"config", cfg.to_json().dump()}});
}

// The config of a fine-tuning run: init_from `dir`, `extra` YAML lines, with the checkpoint's
// settings inherited as `gattn train` inherits them.
Config fine_tuning_config(const fs::path& dir, const std::string& extra) {
  const std::string yaml =
      "seed: 11\ndata: {kind: synthetic, task: assoc_recall, vocab_size: 24, n_pairs: 3}\n"
      "train: {init_from: " +
      dir.string() + "}\n" + extra;
  const Config first = Config::from_string(yaml);
  return Config::from_string(yaml, recipes::init_from_overrides(first));
}

struct Started {
  std::unique_ptr<models::GPT> model;
  recipes::InitFrom init;
};

Started start(const Config& cfg) {
  const std::unique_ptr<Dataset> data = make_dataset(recipes::data_options(cfg), cfg.model_config().block_size);
  Started s{std::make_unique<models::GPT>(cfg.model_config(), 5), {}};
  s.init = recipes::init_from_checkpoint(cfg, *data, *s.model);
  return s;
}

double loss_at(models::GPT& model, std::int64_t step = 0) {
  std::vector<std::int32_t> ids(2 * 16), targets(2 * 16);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    ids[i] = static_cast<std::int32_t>((i * 7 + 3) % 24);
    targets[i] = static_cast<std::int32_t>((i * 5 + 1) % 24);
  }
  model.train();
  model.set_step(step);
  return model.forward(Tensor::from_ints(ids, {2, 16}), Tensor::from_ints(targets, {2, 16})).loss.item();
}

template <class E, class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("wrong exception: ") + e.what();
  }
  return "no exception";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST(InitFrom, EveryGateKindStartsAtTheCheckpointsFunction) {
  Dir tmp;
  write_checkpoint(tmp.path / "src", kSource);
  Started plain = start(fine_tuning_config(tmp.path / "src", ""));
  EXPECT_TRUE(plain.init.new_parameters.empty());
  const double source_loss = loss_at(*plain.model);
  ASSERT_TRUE(std::isfinite(source_loss));
  for (const models::GateKindSpec* kind : models::gate_kinds()) {
    SCOPED_TRACE(kind->name);
    // init_std large, so a gate that did act at step 0 would move the loss far past the tolerance.
    const std::string gate = "model: {gate: {kind: " + kind->name + ", ramp_steps: 10, init_std: 0.5}}\n";
    Started gated = start(fine_tuning_config(tmp.path / "src", gate));
    EXPECT_FALSE(gated.init.new_parameters.empty());
    EXPECT_EQ(gated.init.tensors, static_cast<std::int64_t>(plain.model->named_parameters().size()));
    EXPECT_NEAR(loss_at(*gated.model), source_loss, 1e-6);
    // The gate does act once the ramp is on: the comparison above is not vacuous.
    EXPECT_GT(std::abs(loss_at(*gated.model, 10) - source_loss), 1e-4);
  }
}

TEST(InitFrom, InheritsTheCheckpointsModelAndKeepsItsGates) {
  Dir tmp;
  std::string gated_source = kSource;
  gated_source.replace(gated_source.find("n_embd: 16}"), 11, "n_embd: 16, gate: {kind: output, layers: [1]}}");
  write_checkpoint(tmp.path / "src", gated_source);
  const Config keep = fine_tuning_config(tmp.path / "src", "");
  EXPECT_EQ(keep.model_config().n_embd, 16);
  EXPECT_EQ(keep.model_config().gate_entries().size(), 1u);
  Started kept = start(keep);
  EXPECT_TRUE(kept.init.new_parameters.empty());
  const double source_loss = loss_at(*kept.model);

  // A second gate in block 1 moves the output gate under its kind's name; block 0 gets both new.
  Started both = start(fine_tuning_config(
      tmp.path / "src",
      "model: {gates: [{kind: input, ramp_steps: 5}, {kind: output, layers: [1]}, {kind: output, layers: [0], "
      "ramp_start: 3}]}\n"));
  ASSERT_EQ(both.init.renamed.size(), 2u);  // weight and bias
  EXPECT_TRUE(contains(both.init.renamed[0], "blocks.1.attn.gate.weight -> blocks.1.attn.gate.output.weight"));
  EXPECT_NEAR(loss_at(*both.model), source_loss, 1e-6);

  // Dropping the checkpoint's gate changes its function: refused.
  EXPECT_TRUE(contains(message_of<ConfigError>([&] {
                         start(fine_tuning_config(tmp.path / "src", "model: {gate: {kind: input, ramp_steps: 5}}\n"));
                       }),
                       "keeps the checkpoint's gates"));
}

// A kept gate whose ramp was over at the checkpoint's step does not ramp in again in the new run.
TEST(InitFrom, KeptGatesKeepTheirSettledSchedules) {
  Dir tmp;
  std::string ramped = kSource;
  ramped.replace(ramped.find("n_embd: 16}"), 11,
                 "n_embd: 16, gates: [{kind: output, ramp_steps: 4}, {kind: score, ramp_start: 50}]}");
  const fs::path src = tmp.path / "run" / "step_00000010";  // the step a checkpoint's name gives
  write_checkpoint(src, ramped);
  models::GPT source(Config::from_string(ramped).model_config(), 1);
  load_module((src / "model.safetensors").string(), source);
  const Config inherited = fine_tuning_config(src, "");
  const std::vector<models::GateConfig> gates = inherited.model_config().gate_entries();
  ASSERT_EQ(gates.size(), 2u);
  EXPECT_EQ(models::GateOptions::of(gates[0]).ramp_at(0), 1.0);  // over at step 10: gone
  EXPECT_EQ(models::GateOptions::of(gates[1]).ramp_start, 50);   // not yet begun: as it was
  Started kept = start(inherited);
  EXPECT_TRUE(kept.init.new_parameters.empty());
  EXPECT_NEAR(loss_at(*kept.model, 0), loss_at(source, 10), 1e-6);
}

TEST(InitFrom, RefusesWhatItCannotStartFrom) {
  Dir tmp;
  write_checkpoint(tmp.path / "src", kSource);
  // An added gate without a ramp would change the function at step 0.
  EXPECT_TRUE(contains(
      message_of<ConfigError>([&] { start(fine_tuning_config(tmp.path / "src", "model: {gate: {kind: output}}\n")); }),
      "give it a ramp"));
  // A key that shapes a tensor, named.
  EXPECT_TRUE(
      contains(message_of<ConfigError>([&] { start(fine_tuning_config(tmp.path / "src", "model: {n_embd: 32}\n")); }),
               "model.n_embd: 16 -> 32"));
  // A key that shapes nothing may change; it is reported.
  Started changed = start(fine_tuning_config(tmp.path / "src", "model: {norm_eps: 1.0e-6}\n"));
  ASSERT_EQ(changed.init.config_changes.size(), 1u);
  EXPECT_TRUE(contains(changed.init.config_changes[0], "model.norm_eps"));
  // Missing, and a run directory without a checkpoint.
  EXPECT_TRUE(
      contains(message_of<CheckpointError>([&] { fine_tuning_config(tmp.path / "nowhere", ""); }), "does not exist"));
  fs::create_directories(tmp.path / "empty");
  EXPECT_TRUE(contains(message_of<CheckpointError>([&] { fine_tuning_config(tmp.path / "empty", ""); }),
                       "neither a checkpoint directory"));
  // A tensor that does not match the checkpoint's own config is damage, named.
  {
    const Config cfg = Config::from_string(kSource);
    models::ModelConfig wide = cfg.model_config();
    wide.n_embd = 32;
    models::GPT other(wide, 1);
    fs::create_directories(tmp.path / "damaged");
    save_module((tmp.path / "damaged" / "model.safetensors").string(), other,
                {{"format", kCheckpointFormat}, {"config", cfg.to_json().dump()}});
  }
  EXPECT_TRUE(contains(message_of<CheckpointError>([&] { start(fine_tuning_config(tmp.path / "damaged", "")); }),
                       "(damaged?)"));
}

}  // namespace gattn
