// The config layer: schema defaults, file + override resolution, every error class (with its line
// or override and its key), param groups, the YAML round trip and the ModelConfig it builds.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "framework/config/schema.h"
#include "recipes/common/run_config.h"
#include "recipes/common/run_schema.h"
#include "test_util.h"

namespace gattn {

namespace {

// The message of the ConfigError that f throws (other errors fail the test), or "" for none.
template <class F>
std::string config_error(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// Expects a ConfigError whose message holds every one of `parts`.
::testing::AssertionResult rejects(const std::string& yaml, const std::vector<std::string>& parts,
                                   const std::vector<std::string>& overrides = {}) {
  std::string msg = config_error([&] { Config::from_string(yaml, overrides, "config.yaml"); });
  if (msg.empty()) return ::testing::AssertionFailure() << "accepted:\n" << yaml;
  for (const std::string& p : parts)
    if (msg.find(p) == std::string::npos)
      return ::testing::AssertionFailure() << "message lacks '" << p << "': " << msg;
  return ::testing::AssertionSuccess() << msg;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

// GATTN_SOURCE_DIR, not __FILE__: with ccache's CCACHE_BASEDIR the compiler sees a relative path.
std::filesystem::path repo_root() { return GATTN_SOURCE_DIR; }

const char* kFull = R"(run:
  name: gated
  dir: /tmp/somewhere
seed: 7
device: cpu
model:
  vocab_size: 65
  block_size: 64
  n_layer: 3
  n_head: 2
  n_embd: 32
  gate:
    kind: output
    granularity: headwise
    layers: [0, 2]
    activation: gumbel_sigmoid
    temperature: 0.5
    init_bias: -1.5
    init_weight: zero
data:
  kind: text
  path: data/tiny.txt
train:
  batch_size: 4
  max_steps: 10
  precision: bf16
optim:
  lr: 3e-4
  betas: [0.8, 0.95]
  schedule: constant
  param_groups:
    - name: gates
      match: ["*.attn.gate.*"]
      lr_scale: 2
      freeze_steps: 5
    - name: embeddings
      match: [wte.weight, wpe.weight]
      lr: 1e-4
      weight_decay: 0
regularization:
  attn_entropy: 0.01
dist:
  zero: 1
)";

}  // namespace

TEST(ConfigDefaults, EmptyFileFillsEveryKey) {
  Config c = Config::from_string("");
  EXPECT_EQ(c, Config::defaults());
  EXPECT_EQ(c.get_string("run.name"), "run");
  EXPECT_EQ(c.run_dir(), "runs/run");
  EXPECT_EQ(c.get_int("seed"), 0);
  EXPECT_EQ(c.get_string("device"), "auto");
  EXPECT_EQ(c.get_int("model.block_size"), 128);
  EXPECT_EQ(c.get_string("model.gate.kind"), "none");
  EXPECT_EQ(c.get_string("model.gate.layers"), "all");
  EXPECT_EQ(c.get_int_list("model.gate.windows"), (std::vector<std::int64_t>{0, 32}));
  EXPECT_FALSE(c.has("model.gate.init_bias"));
  EXPECT_TRUE(c.has("optim.lr"));
  EXPECT_DOUBLE_EQ(c.get_double("optim.lr"), 1e-3);
  EXPECT_EQ(c.get_double_list("optim.betas"), (std::vector<double>{0.9, 0.99}));
  EXPECT_EQ(c.get_string("optim.schedule"), "cosine");
  EXPECT_EQ(c.get_int("train.batch_size"), 12);
  EXPECT_EQ(c.get_int("train.max_steps"), 2000);
  EXPECT_EQ(c.get_int("eval.every"), 250);
  EXPECT_EQ(c.get_int("checkpoint.every"), 500);
  EXPECT_TRUE(c.param_groups().empty());
  // Every schema key has a value.
  for (const auto& s : run_schema().keys()) EXPECT_NO_THROW(c.value(s.key)) << s.key;
}

TEST(ConfigDefaults, EmptySectionsAreAllowed) {
  EXPECT_EQ(Config::from_string("model:\noptim:\n"), Config::defaults());
}

TEST(ConfigLoad, FullFile) {
  test::TempDir dir;
  write_file(dir.file("config.yaml"), kFull);
  Config c = Config::load(dir.file("config.yaml"));
  EXPECT_EQ(c.origin(), dir.file("config.yaml"));
  EXPECT_EQ(c.run_dir(), "/tmp/somewhere");
  EXPECT_EQ(c.get_int("seed"), 7);
  EXPECT_EQ(c.get_string("device"), "cpu");
  EXPECT_EQ(c.get_int("model.vocab_size"), 65);
  EXPECT_EQ(c.get_int_list("model.gate.layers"), (std::vector<std::int64_t>{0, 2}));
  EXPECT_TRUE(c.has("model.gate.init_bias"));
  EXPECT_DOUBLE_EQ(c.get_double("model.gate.init_bias"), -1.5);
  EXPECT_EQ(c.get_string("data.path"), "data/tiny.txt");
  EXPECT_EQ(c.get_string("train.precision"), "bf16");
  EXPECT_DOUBLE_EQ(c.get_double("optim.lr"), 3e-4);
  EXPECT_EQ(c.get_double_list("optim.betas"), (std::vector<double>{0.8, 0.95}));
  EXPECT_DOUBLE_EQ(c.get_double("regularization.attn_entropy"), 0.01);
  EXPECT_EQ(c.get_int("dist.zero"), 1);
  // Untouched keys keep their defaults.
  EXPECT_EQ(c.get_int("train.log_every"), 10);
  EXPECT_EQ(c.where("optim.lr"), dir.file("config.yaml") + ":28");
}

TEST(ConfigLoad, ExampleFullIsEveryKeyAtItsDefault) {
  const auto path = repo_root() / "configs" / "example_full.yaml";
  Config c = Config::load(path.string());
  EXPECT_EQ(c, Config::defaults());
  // It really lists every key: each was set by the file, not filled in.
  for (const auto& s : run_schema().keys())
    EXPECT_NE(c.where(s.key), c.origin()) << s.key << " missing from the example";
}

TEST(ConfigLoad, QuickstartLoads) {
  Config c = Config::load((repo_root() / "configs" / "quickstart.yaml").string());
  EXPECT_EQ(c.get_string("model.gate.kind"), "output");
  EXPECT_EQ(c.run_dir(), "runs/quickstart");
}

TEST(ConfigOverrides, WinOverTheFile) {
  test::TempDir dir;
  write_file(dir.file("config.yaml"), kFull);
  Config c =
      Config::load(dir.file("config.yaml"),
                   {"model.n_layer=5", "optim.lr=1e-2", "model.gate.temperature=0.25", "model.gate.kind=output",
                    "model.gate={granularity: headwise, layers: all}", "run.name=other", "model.gate.init_bias=null"});
  EXPECT_EQ(c.get_int("model.n_layer"), 5);
  EXPECT_DOUBLE_EQ(c.get_double("optim.lr"), 1e-2);
  EXPECT_DOUBLE_EQ(c.get_double("model.gate.temperature"), 0.25);
  EXPECT_EQ(c.get_string("model.gate.kind"), "output");
  EXPECT_EQ(c.get_string("model.gate.granularity"), "headwise");
  EXPECT_EQ(c.get_string("model.gate.layers"), "all");
  EXPECT_EQ(c.get_string("run.name"), "other");
  EXPECT_FALSE(c.has("model.gate.init_bias"));
  EXPECT_EQ(c.where("optim.lr"), "override 'optim.lr=1e-2'");
  // Later overrides win over earlier ones.
  Config d = Config::from_string("", {"seed=1", "seed=2"});
  EXPECT_EQ(d.get_int("seed"), 2);
}

TEST(ConfigErrors, MissingFileNamesIt) {
  test::TempDir dir;
  std::string msg = config_error([&] { Config::load(dir.file("nope.yaml")); });
  EXPECT_NE(msg.find("nope.yaml"), std::string::npos) << msg;
  msg = config_error([&] { Config::load(dir.path().string()); });
  EXPECT_NE(msg.find("directory"), std::string::npos) << msg;
}

TEST(ConfigErrors, YamlSyntaxNamesFileAndLine) {
  test::TempDir dir;
  write_file(dir.file("bad.yaml"), "seed: 1\nmodel:\n  n_layer: [1, 2\n");
  std::string msg = config_error([&] { Config::load(dir.file("bad.yaml")); });
  EXPECT_NE(msg.find("bad.yaml:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("YAML syntax error"), std::string::npos) << msg;
  EXPECT_TRUE(rejects("a: b: c\n", {"config.yaml:1", "YAML syntax error"}));
}

TEST(ConfigErrors, UnknownKeyWithLineAndSuggestion) {
  EXPECT_TRUE(rejects("seed: 1\noptim:\n  lr: 1e-3\n  lrr: 2\n",
                      {"config.yaml:4", "unknown key 'optim.lrr'", "(did you mean 'optim.lr'?)"}));
  EXPECT_TRUE(rejects("optm:\n  lr: 1\n", {"config.yaml:1", "unknown key 'optm'", "did you mean 'optim'?"}));
  EXPECT_TRUE(
      rejects("model:\n  gate:\n    knd: output\n", {"config.yaml:3", "'model.gate.knd'", "'model.gate.kind'"}));
  // Far from every key: no suggestion.
  std::string msg = config_error([] { Config::from_string("totally_unrelated: 1\n"); });
  EXPECT_NE(msg.find("unknown key 'totally_unrelated'"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("did you mean"), std::string::npos) << msg;
}

TEST(ConfigErrors, OutOfRangeNamesLineKeyAndValue) {
  EXPECT_TRUE(rejects("seed: 0\noptim:\n  lr: -1\n", {"config.yaml:3: optim.lr must be > 0, got -1"}));
  EXPECT_TRUE(rejects("train:\n  grad_accum: 0\n", {"config.yaml:2", "train.grad_accum must be >= 1, got 0"}));
  EXPECT_TRUE(rejects("model:\n  n_layer: 0\n", {"model.n_layer must be > 0"}));
  EXPECT_TRUE(rejects("dist:\n  zero: 2\n", {"dist.zero must be in [0, 1], got 2"}));
  EXPECT_TRUE(rejects("dist:\n  timeout_s: 0\n", {"config.yaml:2", "dist.timeout_s must be > 0, got 0"}));
  EXPECT_TRUE(rejects("dist:\n  timeout_s: -5\n", {"dist.timeout_s must be > 0"}));
  EXPECT_TRUE(rejects("model:\n  gate:\n    temperature: 0\n", {"config.yaml:3", "model.gate.temperature"}));
  EXPECT_TRUE(rejects("model:\n  gate:\n    windows: [0, -4]\n", {"model.gate.windows[1] must be >= 0, got -4"}));
  EXPECT_TRUE(rejects("optim:\n  betas: [0.9, 1.0]\n", {"optim.betas[1] must be in [0, 1), got 1.0"}));
  EXPECT_TRUE(rejects("optim:\n  betas: [0.9]\n", {"optim.betas must have 2 elements, got 1"}));
}

TEST(ConfigErrors, WrongTypeNamesLineAndKey) {
  EXPECT_TRUE(
      rejects("train:\n  batch_size: 1.5\n", {"config.yaml:2", "train.batch_size must be an integer, got 1.5"}));
  EXPECT_TRUE(rejects("train:\n  batch_size: '8'\n", {"train.batch_size must be an integer, got '8'"}));
  EXPECT_TRUE(rejects("optim:\n  lr: fast\n", {"optim.lr must be a finite number, got fast"}));
  EXPECT_TRUE(rejects("optim:\n  lr: .nan\n", {"optim.lr must be a finite number"}));
  // train.deterministic was accepted and read by nothing (every kernel is deterministic): removed.
  EXPECT_TRUE(rejects("train:\n  deterministic: true\n", {"unknown key 'train.deterministic'"}));
  EXPECT_TRUE(rejects("model:\n  gate:\n    windows: 3\n", {"model.gate.windows must be a list of integers, got 3"}));
  EXPECT_TRUE(rejects("model:\n  gate:\n    layers: some\n", {"model.gate.layers must be 'all' or a list"}));
  EXPECT_TRUE(rejects("model: 3\n", {"config.yaml:1", "'model' must be a map"}));
  EXPECT_TRUE(rejects("- 1\n- 2\n", {"the config must be a map"}));
  EXPECT_TRUE(rejects("run:\n  name: [a]\n", {"run.name must be a string"}));
}

TEST(ConfigErrors, BadChoiceListsTheValidOnes) {
  EXPECT_TRUE(rejects("device: gpu\n", {"config.yaml:1", "device must be one of auto, cpu, cuda, got gpu"}));
  EXPECT_TRUE(
      rejects("model:\n  gate:\n    kind: outptu\n", {"config.yaml:3", "model.gate.kind: unknown gate kind 'outptu'",
                                                      "expected one of none, ", "did you mean 'output'?"}));
}

TEST(ConfigErrors, CrossKeyRulesNameTheLine) {
  EXPECT_TRUE(rejects("model:\n  n_head: 3\n  n_embd: 32\n", {"config.yaml:3", "model.n_embd", "divisible"}));
  EXPECT_TRUE(rejects("model:\n  n_layer: 2\n  gate:\n    layers: [0, 5]\n", {"config.yaml:4", "model.gate.layers"}));
  EXPECT_TRUE(rejects("model:\n  gate:\n    top_k: 3\n", {"config.yaml:3", "model.gate.top_k"}));
  EXPECT_TRUE(rejects("data:\n  kind: text\n", {"config.yaml:2", "data.path must be set"}));
}

TEST(ConfigErrors, DuplicateKey) {
  EXPECT_TRUE(rejects("seed: 1\nseed: 2\n", {"config.yaml:2", "duplicate key 'seed'"}));
}

TEST(ConfigErrors, OverrideErrorsNameTheOverride) {
  EXPECT_TRUE(
      rejects("", {"override 'optim.lrr=1'", "unknown key 'optim.lrr'", "did you mean 'optim.lr'?"}, {"optim.lrr=1"}));
  EXPECT_TRUE(rejects("", {"malformed override 'optim.lr'", "key.path=value"}, {"optim.lr"}));
  EXPECT_TRUE(rejects("", {"malformed override '=3'"}, {"=3"}));
  EXPECT_TRUE(rejects("", {"override 'optim.lr=-1'", "optim.lr must be > 0, got -1"}, {"optim.lr=-1"}));
  EXPECT_TRUE(rejects("", {"override 'model.gate.windows=[0,'", "not valid YAML"}, {"model.gate.windows=[0,"}));
  EXPECT_TRUE(rejects("", {"override 'model.gate={knd: x}'", "unknown key 'model.gate.knd'"}, {"model.gate={knd: x}"}));
  // A value that breaks a cross-key rule points at the override too.
  EXPECT_TRUE(rejects("", {"override 'model.n_head=3'", "model.n_head"}, {"model.n_head=3"}));
}

// Input that used to be accepted silently (docs/cli.md, "Input gattn refuses").
TEST(ConfigErrors, SecondYamlDocumentIsRefused) {
  // YAML::Load kept the first document and dropped the rest: the lr below was never applied.
  EXPECT_TRUE(rejects("seed: 1\n---\noptim: {lr: 0.5}\n", {"config.yaml:3", "second YAML document"}));
  EXPECT_TRUE(rejects("---\nseed: 1\n---\n", {"second YAML document"}));
  EXPECT_NO_THROW(Config::from_string("---\nseed: 1\n...\n"));  // one document with its markers
}

TEST(ConfigErrors, NullSectionIsRefused) {
  // `model: null` trained the default model.
  EXPECT_TRUE(rejects("model: null\n", {"config.yaml:1", "'model' is null"}));
  EXPECT_TRUE(rejects("seed: 1\nmodel:   NULL  # no model?\n", {"config.yaml:2", "'model' is null"}));
  EXPECT_TRUE(rejects("model:\n  gate: ~\n", {"config.yaml:2", "'model.gate' is null"}));
  EXPECT_TRUE(rejects("{seed: 1, model: null}\n", {"'model' is null"}));
  EXPECT_TRUE(rejects("", {"override 'model=null'", "'model' is null"}, {"model=null"}));
  // A section left empty (its keys commented out) is still the defaults (EmptySectionsAreAllowed),
  // a key named like the literal is no null, a nullable key may be null, an empty file is the defaults.
  EXPECT_EQ(Config::from_string("model:\n  # n_layer: 8\nseed: 0\n"), Config::defaults());
  EXPECT_TRUE(rejects("model:\nnull_thing: 1\n", {"unknown key 'null_thing'"}));
  EXPECT_NO_THROW(Config::from_string("model:\n  gate:\n    init_bias: null\n"));
  EXPECT_NO_THROW(Config::from_string(""));
}

TEST(ConfigErrors, RunNameIsOneFolderName) {
  // runs/<run.name>: "../../escape" left runs/, "/etc/passwd" made runs/etc/passwd.
  EXPECT_TRUE(rejects("", {"override 'run.name=../../escape'", "run.name", "contains '/'"}, {"run.name=../../escape"}));
  EXPECT_TRUE(rejects("run: {name: /etc/passwd}\n", {"config.yaml:1", "run.name", "contains '/'"}));
  EXPECT_TRUE(rejects("run: {name: ..}\n", {"config.yaml:1", "run.name"}));
  EXPECT_TRUE(rejects("run: {name: ''}\n", {"run.name", "is empty"}));
  EXPECT_EQ(Config::from_string("run: {name: gpt2.output-gate_v2}\n").run_dir(), "runs/gpt2.output-gate_v2");
  // run.dir is where the user wants the run; run.name is then only a label.
  EXPECT_EQ(Config::from_string("run: {name: '', dir: /tmp/x/y}\n").run_dir(), "/tmp/x/y");
}

// A config file must be a regular file of a config's size.
TEST(ConfigErrors, NonRegularOrHugeConfigFileIsRefused) {
  test::TempDir dir;
  EXPECT_NE(config_error([&] { Config::load(dir.path().string()); }).find("is a directory"), std::string::npos);
  // (/dev/zero and a FIFO are tried from the CLI under a timeout and a memory limit, in
  // tests/integration/cli_input_files.sh: a regression there must not hang or eat this suite.)
  EXPECT_NE(config_error([&] { Config::load(dir.file("missing.yaml")); }).find("does not exist"), std::string::npos);
  write_file(dir.file("huge.yaml"), "# " + std::string(5u << 20, 'x') + "\n");
  EXPECT_NE(config_error([&] { Config::load(dir.file("huge.yaml")); }).find("more than"), std::string::npos);
}

TEST(ConfigParamGroups, Parse) {
  Config c = Config::from_string(kFull);
  auto groups = c.param_groups();
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].name, "gates");
  EXPECT_EQ(groups[0].match, (std::vector<std::string>{"*.attn.gate.*"}));
  EXPECT_FALSE(groups[0].lr.has_value());
  ASSERT_TRUE(groups[0].lr_scale.has_value());
  EXPECT_DOUBLE_EQ(*groups[0].lr_scale, 2.0);
  EXPECT_FALSE(groups[0].weight_decay.has_value());
  EXPECT_EQ(groups[0].freeze_steps, 5);
  EXPECT_EQ(groups[1].name, "embeddings");
  EXPECT_EQ(groups[1].match, (std::vector<std::string>{"wte.weight", "wpe.weight"}));
  ASSERT_TRUE(groups[1].lr.has_value());
  EXPECT_DOUBLE_EQ(*groups[1].lr, 1e-4);
  ASSERT_TRUE(groups[1].weight_decay.has_value());
  EXPECT_EQ(*groups[1].weight_decay, 0.0);
  EXPECT_EQ(groups[1].freeze_steps, 0);
}

TEST(ConfigParamGroups, Errors) {
  const std::string head = "optim:\n  param_groups:\n";
  EXPECT_TRUE(
      rejects(head + "    - name: g\n      lr: 1\n", {"config.yaml:3", "optim.param_groups[0] ('g') needs 'match'"}));
  EXPECT_TRUE(rejects(head + "    - name: g\n      match: []\n", {"config.yaml:4", "match must be a non-empty list"}));
  EXPECT_TRUE(rejects(head + "    - match: [a]\n", {"optim.param_groups[0] needs a 'name'"}));
  EXPECT_TRUE(rejects(head + "    - name: g\n      match: [a]\n      lr_scal: 2\n",
                      {"config.yaml:5", "unknown key 'lr_scal' in optim.param_groups[0]", "did you mean 'lr_scale'?"}));
  EXPECT_TRUE(rejects(head + "    - name: g\n      match: [a]\n      lr: 1\n      lr_scale: 2\n",
                      {"config.yaml:6", "lr_scale given together with lr"}));
  EXPECT_TRUE(rejects(head + "    - name: g\n      match: [a]\n      lr_scale: 0\n",
                      {"config.yaml:5", "optim.param_groups[0].lr_scale must be a finite number > 0, got 0"}));
  EXPECT_TRUE(rejects(head + "    - name: g\n      match: [a]\n      freeze_steps: -1\n",
                      {"optim.param_groups[0].freeze_steps must be >= 0"}));
  EXPECT_TRUE(rejects(head + "    - name: g\n      match: [a]\n    - name: g\n      match: [b]\n",
                      {"config.yaml:5", "used twice"}));
  EXPECT_TRUE(rejects(head + "    - 3\n", {"optim.param_groups[0] must be a map"}));
  EXPECT_TRUE(rejects("optim:\n  param_groups: {name: g}\n", {"optim.param_groups must be a list"}));
}

TEST(ConfigYaml, RoundTripGivesTheSameConfig) {
  const std::vector<std::string> overrides = {"run.name='my run: #1'", "data.path='yes'", "optim.eps=1e-12",
                                              "regularization.gate_entropy=-0.25", "seed=-3"};
  Config c = Config::from_string(kFull, overrides);
  EXPECT_EQ(c.get_string("run.name"), "my run: #1");
  EXPECT_EQ(c.get_string("data.path"), "yes");
  const std::string yaml = c.to_yaml();
  EXPECT_EQ(yaml, c.to_yaml());  // deterministic
  Config back = Config::from_string(yaml, {}, "resolved.yaml");
  EXPECT_EQ(back, c) << yaml;
  EXPECT_EQ(back.to_yaml(), yaml);
  EXPECT_EQ(back.param_groups(), c.param_groups());
  // The defaults round-trip too, through a file.
  test::TempDir dir;
  write_file(dir.file("config.yaml"), Config::defaults().to_yaml());
  EXPECT_EQ(Config::load(dir.file("config.yaml")), Config::defaults());
  // Floats stay floats for other YAML readers.
  EXPECT_NE(Config::defaults().to_yaml().find("eps: 1.0e-08"), std::string::npos) << Config::defaults().to_yaml();
}

TEST(ConfigJson, NestedObjectOfEveryKey) {
  Config c = Config::from_string(kFull);
  nlohmann::json j = c.to_json();
  EXPECT_EQ(j["model"]["gate"]["kind"], "output");
  EXPECT_EQ(j["model"]["gate"]["granularity"], "headwise");
  EXPECT_EQ(j["model"]["gates"], nlohmann::json::array());
  EXPECT_EQ(j["optim"]["lr"], 3e-4);
  EXPECT_EQ(j["seed"], 7);
  EXPECT_EQ(j["optim"]["param_groups"][0]["name"], "gates");
  EXPECT_TRUE(Config::defaults().to_json()["model"]["gate"]["init_bias"].is_null());
}

TEST(ConfigModel, ModelConfigMatches) {
  Config c = Config::from_string(kFull);
  models::ModelConfig m = c.model_config();
  EXPECT_EQ(m.vocab_size, 65);
  EXPECT_EQ(m.block_size, 64);
  EXPECT_EQ(m.n_layer, 3);
  EXPECT_EQ(m.n_head, 2);
  EXPECT_EQ(m.n_embd, 32);
  EXPECT_EQ(m.gate.kind, "output");
  EXPECT_FALSE(m.gate.all_layers);
  EXPECT_EQ(m.gate.layers, (std::vector<std::int64_t>{0, 2}));
  EXPECT_EQ(m.gate.activation, "gumbel_sigmoid");
  EXPECT_DOUBLE_EQ(m.gate.temperature, 0.5);
  EXPECT_DOUBLE_EQ(m.gate.init_bias, -1.5);
  EXPECT_EQ(m.gate.init_weight, "zero");
  EXPECT_EQ(m.gate.string_option("granularity"), "headwise");
  // In the schema's order: the entry and common keys, then the kinds' options (models::gate_entry_keys).
  EXPECT_EQ(m.gate.set_keys, (std::vector<std::string>{"kind", "layers", "activation", "temperature", "init_bias",
                                                       "init_weight", "granularity"}));
  EXPECT_NO_THROW(m.validate());
  // The JSON of the model section is what models/config.cpp writes.
  EXPECT_EQ(models::to_json(m), c.to_json()["model"]);
  // Defaults: vocab from the data, the kind's default bias.
  models::ModelConfig d = Config::defaults().model_config();
  EXPECT_EQ(d.vocab_size, 0);
  EXPECT_TRUE(std::isnan(d.gate.init_bias));
  EXPECT_TRUE(d.gate.all_layers);
  EXPECT_EQ(d.gate.kind, "none");
}

TEST(ConfigGates, SeveralGatesParse) {
  Config c = Config::from_string(
      "model:\n  n_layer: 4\n  gates:\n    - kind: score\n    - {kind: output, layers: [2, 3], granularity: headwise}\n"
      "    - kind: routed\n      windows: [0, 16]\n      top_k: 1\n",
      {}, "config.yaml");
  models::ModelConfig m = c.model_config();
  EXPECT_EQ(m.gate.kind, "none");
  ASSERT_EQ(m.gates.size(), 3u);
  EXPECT_EQ(m.gates[0].kind, "score");
  EXPECT_TRUE(m.gates[0].all_layers);
  EXPECT_EQ(m.gates[1].where, "model.gates[1]");
  EXPECT_EQ(m.gates[1].layers, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(m.gates[1].string_option("granularity"), "headwise");
  EXPECT_EQ(m.gates[2].int_list_option("windows"), (std::vector<std::int64_t>{0, 16}));
  EXPECT_EQ(m.gates[1].set_keys, (std::vector<std::string>{"granularity", "kind", "layers"}));
  // Block 3 has all three, in the fixed order of application.
  std::vector<std::string> order;
  for (const models::GateConfig& g : m.layer_gates(3)) order.push_back(g.kind);
  EXPECT_EQ(order, (std::vector<std::string>{"score", "routed", "output"}));
  EXPECT_EQ(m.layer_gates(0).size(), 2u);
  // The resolved YAML reads back to the same config (run directories keep it).
  EXPECT_EQ(Config::from_string(c.to_yaml(), {}, "resolved.yaml"), c) << c.to_yaml();
  // The kind-specific defaults come from the kind.
  Config d = Config::from_string("model:\n  gates:\n    - kind: routed\n");
  EXPECT_EQ(d.model_config().gates[0].int_list_option("windows"), (std::vector<std::int64_t>{0, 32}));
  EXPECT_EQ(d.model_config().gates[0].int_option("top_k"), 1);
}

TEST(ConfigGates, OverrideOfOneFormReplacesTheOtherFromTheFile) {
  const std::string file = "model:\n  gates:\n    - kind: score\n    - kind: output\n";
  Config a = Config::from_string(file, {"model.gate.kind=forget"});
  EXPECT_EQ(a.model_config().gates.size(), 0u);
  EXPECT_EQ(a.model_config().gate.kind, "forget");
  Config b = Config::from_string("model:\n  gate:\n    kind: output\n    granularity: headwise\n",
                                 {"model.gates=[{kind: score}]"});
  EXPECT_EQ(b.model_config().gate.kind, "none");
  EXPECT_EQ(b.get_string("model.gate.granularity"), "elementwise");
  ASSERT_EQ(b.model_config().gates.size(), 1u);
  EXPECT_EQ(b.model_config().gates[0].kind, "score");
}

TEST(ConfigGates, BadGateEntriesNameTheKey) {
  const std::string head = "model:\n  n_layer: 2\n  gates:\n";
  EXPECT_TRUE(rejects("model:\n  gate:\n    kind: output\n  gates:\n    - kind: score\n",
                      {"config.yaml:3", "model.gate and model.gates are both given"}));
  EXPECT_TRUE(
      rejects(head + "    - kind: output\n    - {kind: output, layers: [1]}\n",
              {"config.yaml:3", "model.gates[1].layers", "block 1 already has a 'output' gate from model.gates[0]"}));
  EXPECT_TRUE(rejects(head + "    - {kind: output, layers: [2]}\n",
                      {"model.gates[0].layers", "block index 2 out of range [0, 2)"}));
  EXPECT_TRUE(rejects(head + "    - kind: sideways\n",
                      {"model.gates[0].kind: unknown gate kind 'sideways'", "expected one of none, ", "score"}));
  EXPECT_TRUE(rejects(head + "    - {layers: [0]}\n", {"model.gates[0].kind: missing"}));
  EXPECT_TRUE(rejects(head + "    - kind: none\n", {"model.gates[0].kind", "needs a gate kind"}));
  EXPECT_TRUE(rejects(head + "    - {kind: output, colour: red}\n", {"model.gates[0].colour: unknown key"}));
  EXPECT_TRUE(rejects(head + "    - 3\n", {"config.yaml:4", "model.gates[0] must be a map"}));
  EXPECT_TRUE(rejects("model:\n  gates: {kind: output}\n", {"model.gates must be a list"}));
}

TEST(ConfigGates, SettingsThatDoNothingAreErrors) {
  // A key the chosen kind does not read would make an ablation compare what it did not mean to.
  EXPECT_TRUE(rejects("model:\n  gate:\n    kind: score\n    granularity: headwise\n",
                      {"config.yaml:4", "model.gate.granularity: means nothing for gate kind 'score'"}));
  EXPECT_TRUE(rejects("model:\n  gate:\n    kind: output\n    windows: [0, 8]\n",
                      {"model.gate.windows: means nothing for gate kind 'output'"}));
  EXPECT_TRUE(rejects("model:\n  gate:\n    kind: routed\n    activation: gumbel_sigmoid\n",
                      {"model.gate.activation: means nothing for gate kind 'routed'"}));
  EXPECT_TRUE(rejects("model:\n  gate:\n    kind: routed\n    init_bias: 1\n",
                      {"model.gate.init_bias: means nothing for gate kind 'routed'"}));
  // forget's prefix sums need log g ≤ 0 (a softplus forget gate could grow a logit without bound);
  // score takes softplus (a key boosted as well as masked).
  EXPECT_TRUE(rejects("model:\n  gate:\n    kind: forget\n    activation: softplus\n",
                      {"model.gate.activation: 'softplus' means nothing for gate kind 'forget'"}));
  EXPECT_NO_THROW(Config::from_string("model:\n  gate:\n    kind: score\n    activation: softplus\n"));
  // Binary entropy of values past 1 means nothing: gate_entropy is refused with a softplus gate,
  // on the score gate and on a multiplying one alike.
  for (const char* kind : {"score", "output"})
    EXPECT_TRUE(rejects(std::string("model:\n  gate:\n    kind: ") + kind +
                            "\n    activation: softplus\nregularization:\n  gate_entropy: 0.01\n",
                        {"config.yaml:6", "regularization.gate_entropy means nothing for model.gate (kind " +
                                              std::string(kind) + "): activation softplus"}))
        << kind;
  EXPECT_NO_THROW(Config::from_string(
      "model:\n  gate:\n    kind: score\n    activation: softplus\nregularization:\n  gate_l1: 0.01\n"));
  EXPECT_TRUE(rejects("model:\n  gate:\n    kind: pair\n    activation: tanh_magnitude\n",
                      {"model.gate.activation: 'tanh_magnitude' means nothing for gate kind 'pair'"}));
  EXPECT_TRUE(rejects("model:\n  gate:\n    kind: input\n    groups: 2\n",
                      {"model.gate.groups: means nothing for gate kind 'input'"}));
  EXPECT_TRUE(rejects("model:\n  gate:\n    kind: output\n    shared_projection: true\n",
                      {"model.gate.shared_projection: means nothing for gate kind 'output'"}));
  EXPECT_TRUE(rejects("model:\n  gate:\n    kind: output\n    hard_threshold: 0.3\n",
                      {"model.gate.hard_threshold: means nothing without hard: true"}));
  EXPECT_TRUE(rejects("model:\n  gate:\n    kind: output\n    temperature_final: 2\n",
                      {"model.gate.temperature_final: needs temperature_steps > 0"}));
  EXPECT_TRUE(rejects("model:\n  gate:\n    kind: score\n    source: query_key\n",
                      {"model.gate.source: query_key needs form: multiplicative"}));
  EXPECT_TRUE(rejects("model:\n  gate:\n    kind: output\n    activation: tanh_magnitude\n    hard: true\n",
                      {"model.gate.hard: means nothing with activation 'tanh_magnitude'"}));
  EXPECT_TRUE(rejects("model:\n  gate:\n    top_k: 2\n", {"model.gate.top_k: means nothing without a gate"}));
  EXPECT_TRUE(rejects("model:\n  gates:\n    - {kind: score, top_k: 2}\n",
                      {"model.gates[0].top_k: means nothing for gate kind 'score'"}));
  EXPECT_TRUE(rejects("model:\n  gate:\n    kind: output\n    alpha_init: 0.7\n",
                      {"config.yaml:4", "model.gate.alpha_init: means nothing for gate kind 'output'"}));
  EXPECT_TRUE(rejects("model:\n  gate:\n    kind: pair\n    alpha_init: 1.0\n",
                      {"config.yaml:4", "model.gate.alpha_init must be in (0, 1)"}));
  EXPECT_TRUE(rejects("model:\n  gate:\n    kind: score\n    init_weight: zero\n    init_std: 0.1\n",
                      {"config.yaml:5", "model.gate.init_std: means nothing with init_weight 'zero'"}));
  EXPECT_TRUE(rejects("model:\n  gate:\n    kind: score\n    init_std: 0\n",
                      {"config.yaml:4", "model.gate.init_std must be > 0"}));
  EXPECT_TRUE(rejects("model:\n  gates:\n    - {kind: routed, init_std: -1}\n",
                      {"model.gates[0].init_std: must be a finite number > 0, got -1"}));
  EXPECT_TRUE(rejects("model:\n  gates:\n    - {kind: pair, alpha_init: 0}\n",
                      {"model.gates[0].alpha_init: must be a number in (0, 1), got 0"}));
  // forget's prune_threshold: a θ in [0, 1), forget only, causal attention only.
  for (const char* bad : {"1.0", "-0.1", "2", ".nan"})
    EXPECT_TRUE(rejects(std::string("model:\n  gate:\n    kind: forget\n    prune_threshold: ") + bad + "\n",
                        {"model.gate.prune_threshold"}))
        << bad;
  EXPECT_TRUE(
      rejects("model:\n  gates:\n    - {kind: forget, prune_threshold: 1}\n", {"model.gates[0].prune_threshold"}));
  EXPECT_TRUE(rejects("model:\n  gate:\n    kind: score\n    prune_threshold: 0.01\n",
                      {"model.gate.prune_threshold: means nothing for gate kind 'score'"}));
  EXPECT_NO_THROW(Config::from_string("model:\n  gate:\n    kind: forget\n    prune_threshold: 0.001\n"));
  EXPECT_NO_THROW(Config::from_string("model:\n  gates:\n    - {kind: forget, prune_threshold: 0.001}\n"));
  // The same keys where they mean something are fine.
  EXPECT_NO_THROW(Config::from_string("model:\n  gate:\n    kind: output\n    granularity: headwise\n"));
  EXPECT_NO_THROW(
      Config::from_string("model:\n  gate:\n    kind: pair\n    activation: gumbel_sigmoid\n    temperature: 0.5\n"));
  EXPECT_NO_THROW(Config::from_string("model:\n  gate:\n    kind: routed\n    windows: [0, 8, 16]\n    top_k: 2\n"));
}

TEST(ConfigGetters, WrongTypeOrUnknownKeyThrows) {
  Config c = Config::defaults();
  EXPECT_NE(config_error([&] { c.get_int("optim.lr"); }).find("optim.lr"), std::string::npos);
  EXPECT_NE(config_error([&] { c.get_string("seed"); }).find("seed"), std::string::npos);
  EXPECT_NE(config_error([&] { c.get_int("optim.lrr"); }).find("did you mean 'optim.lr'"), std::string::npos);
  EXPECT_FALSE(c.has("no.such.key"));
  EXPECT_DOUBLE_EQ(c.get_double("seed"), 0.0);  // integers read as doubles
}

TEST(ConfigSchema, EditDistanceAndClosestKey) {
  EXPECT_EQ(config::edit_distance("optim.lrr", "optim.lr"), 1u);
  EXPECT_EQ(config::edit_distance("", "abc"), 3u);
  EXPECT_EQ(run_schema().closest_key("train.batchsize"), "train.batch_size");
  EXPECT_EQ(run_schema().closest_key("zzzzzzzz"), "");
  EXPECT_TRUE(run_schema().is_section("model.gate"));
  EXPECT_FALSE(run_schema().is_section("model.gate.kind"));
  EXPECT_NE(run_schema().find("optim.param_groups"), nullptr);
}

}  // namespace gattn
