// Test tool: writes DIR/model.safetensors for a tiny GPT with the given gate kind, with the metadata of
// docs/checkpoint-format.md (format, config, vocab), so the CLI tests have a checkpoint to read.
// Usage: gattn_make_checkpoint DIR GATE_KIND [TEXT_PATH]
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "framework/io/module_io.h"
#include "models/gpt.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: gattn_make_checkpoint DIR GATE_KIND [TEXT_PATH]\n";
    return 2;
  }
  try {
    gattn::models::ModelConfig mc;
    mc.vocab_size = 16;
    mc.block_size = 32;
    mc.n_layer = 2;
    mc.n_head = 2;
    mc.n_embd = 16;
    mc.gate.kind = argv[2];
    gattn::models::GPT model(mc, 1);
    nlohmann::json config;
    config["model"] = gattn::models::to_json(mc);
    config["seed"] = 1;
    nlohmann::json vocab = nlohmann::json::array();
    for (int b = 0; b < 16; ++b) vocab.push_back(97 + b);  // 'a' … 'p'
    if (argc > 3) config["data"] = {{"kind", "text"}, {"path", argv[3]}};
    std::filesystem::create_directories(argv[1]);
    gattn::save_module(std::string(argv[1]) + "/model.safetensors", model,
                       {{"format", gattn::kCheckpointFormat}, {"config", config.dump()}, {"vocab", vocab.dump()}});
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "gattn_make_checkpoint: " << e.what() << "\n";
    return 1;
  }
}
