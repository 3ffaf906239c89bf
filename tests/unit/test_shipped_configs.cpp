// Every training YAML under configs/ loads through the schema, and its parameter groups match
// parameters of the model it describes (a glob matching nothing is a config error at train time);
// every ablation file under configs/ablation/ does the same for each of its cells.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "framework/optim/adamw.h"
#include "models/gpt.h"
#include "recipes/ablate/ablation.h"
#include "recipes/common/run_config.h"
#include "recipes/common/run_setup.h"
#include "test_util.h"

namespace gattn {
namespace {

namespace fs = std::filesystem;

// The training configs (ablation = false) or the ablation files (configs/ablation/).
std::vector<std::string> shipped_configs(bool ablation = false) {
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(GATTN_SOURCE_DIR) / "configs"))
    if (e.is_regular_file() && e.path().extension() == ".yaml" &&
        (e.path().parent_path().filename() == "ablation") == ablation)
      files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

// The model's shape at a size that builds in milliseconds: the same parameter names (4 heads, so
// grouped gates of up to 4 heads fit).
const std::vector<std::string> kSmall{"model.n_layer=2", "model.n_embd=16", "model.n_head=4", "model.block_size=32",
                                      "model.vocab_size=11"};

// A config that starts from a shipped config's run (train.init_from: runs/<its run.name>) takes that
// config's model.* keys, as `gattn train` takes them from the run's checkpoint, the gates excepted
// when it names its own. They come first, so its own keys win; the model keeps its size, since its
// gates may name blocks a smaller one does not have.
std::vector<std::string> inherited_model_keys(const Config& cfg, const std::vector<std::string>& files) {
  const std::string from = cfg.get_string("train.init_from");
  if (from.empty()) return {};
  bool names_gates = false;
  for (const config::KeySpec& k : cfg.schema().keys())
    names_gates =
        names_gates || ((k.key.rfind("model.gate.", 0) == 0 || k.key == "model.gates") && cfg.set_by_user(k.key));
  for (const std::string& file : files) {
    const Config source = Config::load(file);
    if ("runs/" + source.get_string("run.name") != from) continue;
    std::vector<std::string> out;
    for (const config::KeySpec& k : source.schema().keys())
      if (k.key.rfind("model.", 0) == 0 && source.set_by_user(k.key) &&
          !(names_gates && (k.key.rfind("model.gate.", 0) == 0 || k.key == "model.gates")))
        out.push_back(k.key + "=" + source.value(k.key).dump());
    return out;
  }
  ADD_FAILURE() << "train.init_from " << from << " names no shipped config's run";
  return {};
}

TEST(ShippedConfigs, LoadAndTheirGroupsMatchTheModel) {
  const std::vector<std::string> files = shipped_configs();
  ASSERT_GE(files.size(), 10u);  // quickstart, example_full, gpt2_124m, the seven shakespeare_char runs
  for (const std::string& file : files) {
    SCOPED_TRACE(file);
    const std::vector<std::string> inherited = inherited_model_keys(Config::load(file), files);
    Config cfg = Config::load(file, inherited);
    std::vector<std::string> small_keys = inherited;
    if (inherited.empty()) small_keys = kSmall;
    if (!inherited.empty() && cfg.get_int("model.vocab_size") == 0) small_keys.push_back("model.vocab_size=11");
    Config small = Config::load(file, small_keys);
    models::GPT model(small.model_config(), 0);
    EXPECT_NO_THROW(optim::AdamW(model.named_parameters(), recipes::adamw_options(small)));
    // A gated model trains its gates in their own group ([GatedAttn-Repro] §5.2's lower gate lr).
    if (cfg.model_config().gate.kind != "none" && cfg.model_config().gate.kind != "routed") {
      optim::AdamW opt(model.named_parameters(), recipes::adamw_options(small));
      int gate_parameters = 0;
      for (const auto& [name, p] : model.named_parameters()) {
        if (name.find(".attn.gate.") == std::string::npos) continue;
        ++gate_parameters;
        EXPECT_NE(opt.group_of(name), optim::AdamW::kDefaultGroup) << name;
      }
      EXPECT_GT(gate_parameters, 0);
    }
  }
}

TEST(ShippedConfigs, EveryAblationCellLoadsAndTrainsItsParameters) {
  const std::vector<std::string> files = shipped_configs(true);
  ASSERT_GE(files.size(), 2u);  // noisy_recall, shakespeare_char
  for (const std::string& file : files) {
    SCOPED_TRACE(file);
    const recipes::AblationSpec spec = recipes::load_ablation(file);
    const std::string base = (fs::path(GATTN_SOURCE_DIR) / spec.base).string();  // relative to the project root
    for (const recipes::Cell& cell : recipes::expand_grid(spec.grid)) {
      SCOPED_TRACE(cell.name);
      std::vector<std::string> overrides = spec.overrides;
      for (const std::string& ov : cell.overrides()) overrides.push_back(ov);
      overrides.insert(overrides.end(), kSmall.begin(), kSmall.end());
      Config small = Config::load(base, overrides);
      models::GPT model(small.model_config(), 0);
      EXPECT_NO_THROW(optim::AdamW(model.named_parameters(), recipes::adamw_options(small)));
    }
  }
}

// llm.c's shard format holding `tokens` (little-endian host, like the format).
void write_llmc_shard(const std::string& path, const std::vector<std::uint16_t>& tokens) {
  std::vector<std::int32_t> header(256, 0);
  header[0] = 20240520;
  header[1] = 1;
  header[2] = static_cast<std::int32_t>(tokens.size());
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(header.data()), 1024);
  out.write(reinterpret_cast<const char*>(tokens.data()), static_cast<std::streamsize>(2 * tokens.size()));
}

// Regression: the GPT-2 recipe read real GPT-2 shards against data.vocab_size (32, a
// synthetic-task setting) and refused token id 49. Its ids are checked against model.vocab_size.
TEST(ShippedConfigs, Gpt2ConfigReadsGpt2TokenIds) {
  test::TempDir dir;
  std::vector<std::uint16_t> tokens(2048);
  for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<std::uint16_t>((i * 7919) % 50257);
  tokens[5] = 50256;  // <|endoftext|>, GPT-2's largest id
  write_llmc_shard(dir.file("fineweb_train_000001.bin"), tokens);
  write_llmc_shard(dir.file("fineweb_val_000000.bin"), tokens);
  const std::string file = (fs::path(GATTN_SOURCE_DIR) / "configs" / "gpt2_124m.yaml").string();
  const Config cfg = Config::load(file, {"data.path=" + dir.path().string()});
  std::unique_ptr<Dataset> data;
  ASSERT_NO_THROW(data = make_dataset(recipes::data_options(cfg), cfg.model_config().block_size));
  EXPECT_EQ(data->vocab_size(), 50304);  // the model's padded vocabulary
  // An id the model has no embedding for is still refused, naming the model's vocabulary.
  tokens[9] = 50304;
  write_llmc_shard(dir.file("fineweb_val_000000.bin"), tokens);
  const std::string msg = test::error_of([&] { make_dataset(recipes::data_options(cfg), 1024); });
  EXPECT_NE(msg.find("fineweb_val_000000.bin holds token id 50304 at token 9 (byte offset 1042) of the shard, "
                     "outside the model's vocabulary (model.vocab_size 50304)"),
            std::string::npos)
      << msg;
}

}  // namespace
}  // namespace gattn
