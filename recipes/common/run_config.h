// The resolved run config: YAML file + dotted overrides + the run schema's defaults
// (recipes/common/run_schema.h), validated up front with errors that name the file line (or the
// override) and the key (docs/config.md). The generic machinery is framework/config/settings.h;
// this adds the run's rules and what the recipes read out of a config.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "framework/config/settings.h"
#include "framework/optim/param_group.h"
#include "models/config.h"

namespace gattn {

// One entry of optim.param_groups (docs/config.md): the optimizer's own struct, so the config hands
// AdamW what it read without a copy field by field.
using ParamGroupSpec = optim::ParamGroupOptions;

class Config : public config::Settings {
 public:
  // Reads `yaml_path`, applies `overrides` ("key.path=value", value parsed as YAML), fills the
  // defaults and validates. Throws ConfigError naming the file:line or the override and the key.
  static Config load(const std::string& yaml_path, const std::vector<std::string>& overrides = {});
  // The same from text; `origin_name` stands for the file name in messages.
  static Config from_string(const std::string& yaml_text, const std::vector<std::string>& overrides = {},
                            const std::string& origin_name = "<string>");
  // Defaults only (what an empty file gives).
  static Config defaults();

  models::ModelConfig model_config() const;
  std::vector<ParamGroupSpec> param_groups() const;
  // run.dir, or runs/<run.name> when it is empty.
  std::string run_dir() const;

 private:
  explicit Config(config::Settings settings) : config::Settings(std::move(settings)) {}
};

}  // namespace gattn
