// The end-of-run samples: text from the model, or a decoded val source.
#include "recipes/common/run_samples.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "framework/data/dataset.h"
#include "framework/text/text_codec.h"
#include "models/sampling.h"

namespace gattn::recipes {

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
