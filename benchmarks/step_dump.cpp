// Tool for benchmarks/scripts/step_parity.py: one training step of a checkpointed model on a given
// batch, written out so an independent implementation (PyTorch) can be compared with it.
// Usage: gattn_step_dump CHECKPOINT_DIR BATCH_FILE OUT_DIR
//   BATCH_FILE holds "B T" as two little-endian int32, then x and y as B·T int32 each.
//   Writes OUT_DIR/grads.safetensors (each parameter's gradient of the mean cross-entropy) and
//   OUT_DIR/updated.safetensors (the parameters after clipping and one AdamW step from the
//   checkpoint's optimizer state, at the checkpoint's step), and prints loss, grad norm and lr.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "framework/io/optimizer_io.h"
#include "framework/io/safetensors.h"
#include "framework/io/train_state.h"
#include "framework/runtime/threads.h"
#include "recipes/common/checkpoint_model.h"
#include "recipes/common/run_setup.h"

namespace {

using namespace gattn;
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

void read_batch(const std::string& path, Tensor& x, Tensor& y) {
  std::ifstream f(path, std::ios::binary);
  std::int32_t dims[2] = {0, 0};
  if (!f.read(reinterpret_cast<char*>(dims), sizeof dims) || dims[0] <= 0 || dims[1] <= 0)
    throw std::runtime_error("step_dump: " + path + " does not start with two positive int32 (B, T)");
  x = Tensor::empty({dims[0], dims[1]}, DType::i32);
  y = Tensor::empty({dims[0], dims[1]}, DType::i32);
  const auto bytes = static_cast<std::streamsize>(x.numel() * 4);
  if (!f.read(reinterpret_cast<char*>(x.data<std::int32_t>()), bytes) ||
      !f.read(reinterpret_cast<char*>(y.data<std::int32_t>()), bytes))
    throw std::runtime_error("step_dump: " + path + " is shorter than its B·T·2 tokens");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: gattn_step_dump CHECKPOINT_DIR BATCH_FILE OUT_DIR\n";
    return 2;
  }
  try {
    const std::string ckpt = argv[1], out = argv[3];
    recipes::CheckpointModel cm = recipes::load_checkpoint_model(ckpt, {}, "step_dump");
    models::GPT& model = *cm.model;
    Tensor x, y;
    read_batch(argv[2], x, y);
    model.train();
    models::ForwardResult r = model.forward(x, y, {});
    r.loss.backward();
    NamedTensors grads;
    for (auto& [name, p] : model.named_parameters()) grads.emplace_back(name, p.grad().clone());
    std::filesystem::create_directories(out);
    save_safetensors(out + "/grads.safetensors", grads);

    const std::string dir = std::filesystem::path(cm.model_path).parent_path().string();
    optim::AdamW opt(model.named_parameters(), recipes::adamw_options(cm.config));
    load_optimizer(load_safetensors(dir + "/optimizer.safetensors"), opt);
    const std::int64_t step = read_train_state(dir + "/state.json").step;
    const double norm = opt.clip_grad_norm();
    opt.step(step);
    NamedTensors updated;
    for (auto& [name, p] : model.named_parameters()) updated.emplace_back(name, p.detach());
    save_safetensors(out + "/updated.safetensors", updated);
    std::printf("{\"loss\": %.9g, \"grad_norm\": %.9g, \"lr\": %.12g, \"step\": %lld}\n", r.loss.item(), norm,
                opt.lr_of_group(optim::AdamW::kDefaultGroup, step), static_cast<long long>(step));
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "step_dump: " << e.what() << "\n";
    return 3;
  }
}
