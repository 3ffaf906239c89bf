// Running a checkpoint over val windows with the inspection hook.
#include "recipes/ablate/run_probe.h"

#include <algorithm>

#include "framework/autograd/grad_mode.h"
#include "framework/data/dataset.h"
#include "framework/io/checkpoint_text.h"
#include "framework/text/text_codec.h"
#include "ops/shape.h"
#include "recipes/common/checkpoint_model.h"
#include "recipes/common/run_setup.h"

namespace gattn::recipes {

RunProbe probe_run(const std::string& run_dir, std::int64_t windows, std::int64_t max_tokens) {
  RunProbe probe;
  try {
    CheckpointModel ckpt = load_checkpoint_model(run_dir, {}, "report");
    models::GPT& model = *ckpt.model;
    const std::int64_t T = model.config().block_size;
    std::unique_ptr<Dataset> data = make_dataset(data_options(ckpt.config), T);
    const std::int64_t count = std::clamp<std::int64_t>(windows, 1, data->eval_windows(T, 0));
    Tensor x = data->eval_batch(0, count, T).x;
    const std::int64_t n = std::clamp<std::int64_t>(max_tokens, 1, T);
    if (n < T) x = ops::slice(x, 1, 0, n);
    NoGradGuard no_grad;
    model.eval();
    models::ForwardOptions fo;
    fo.inspect = true;
    probe.layers = model.forward(x, Tensor(), fo).inspection;
    const std::vector<double> ids = ops::slice(x, 0, 0, 1).to_vector();
    probe.text = ckpt.codec != nullptr;
    probe.subword = ckpt.metadata.count(kTokenizerKey) > 0;
    for (double id : ids) {
      const auto t = static_cast<std::int32_t>(id);
      probe.tokens.push_back(ckpt.codec ? display_token(ckpt.codec->token_bytes(t)) : std::to_string(t));
    }
  } catch (const std::exception& e) {
    probe = RunProbe{};
    probe.note = e.what();
  }
  return probe;
}

}  // namespace gattn::recipes
