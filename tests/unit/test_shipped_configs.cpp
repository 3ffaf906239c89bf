// Every YAML under configs/ loads through the schema, and its parameter groups match parameters
// of the model it describes (a glob matching nothing is a config error at train time).
#include <gtest/gtest.h>

#include <filesystem>

#include "framework/config/config.h"
#include "framework/optim/adamw.h"
#include "models/gpt.h"
#include "recipes/run_setup.h"

namespace gattn {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> shipped_configs() {
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(GATTN_SOURCE_DIR) / "configs"))
    if (e.is_regular_file() && e.path().extension() == ".yaml") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

TEST(ShippedConfigs, LoadAndTheirGroupsMatchTheModel) {
  const std::vector<std::string> files = shipped_configs();
  ASSERT_GE(files.size(), 10u);  // quickstart, example_full, gpt2_124m, the seven shakespeare_char runs
  for (const std::string& file : files) {
    SCOPED_TRACE(file);
    Config cfg = Config::load(file);
    // The model's shape at a size that builds in milliseconds: the same parameter names.
    Config small = Config::load(file, {"model.n_layer=2", "model.n_embd=16", "model.n_head=2", "model.block_size=32",
                                       "model.vocab_size=11"});
    models::GPT model(small.model_config(), 0);
    EXPECT_NO_THROW(optim::AdamW(model.named_parameters(), recipes::adamw_options(small)));
    // A gated model trains its gates in their own group (seed 001's lower gate lr).
    if (cfg.model_config().gate.kind != models::GateKind::none && cfg.model_config().gate.kind != models::GateKind::routed) {
      optim::AdamW opt(model.named_parameters(), recipes::adamw_options(small));
      EXPECT_NE(opt.group_of("blocks.0.attn.gate.bias"), optim::AdamW::kDefaultGroup);
    }
  }
}

}  // namespace
}  // namespace gattn
