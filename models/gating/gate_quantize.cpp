// Per-output-channel int8 rounding of the gates' weight matrices.
#include "models/gating/gate_quantize.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "models/attention.h"

namespace gattn::models {

namespace {

// The parameter-name prefixes of every configured gate: one per (gate, site, block it sits in).
std::set<std::string> gate_prefixes(const ModelConfig& config) {
  std::set<std::string> out;
  for (const std::string site : {kSiteSelf, kSiteCross, kSiteEncoder})
    for (std::int64_t layer = 0; layer < config.site_layers(site); ++layer)
      for (const GateConfig& g : config.layer_gates(layer, site))
        out.insert(gate_parameter_prefix(config, layer, g.kind, site));
  return out;
}

bool under_a_prefix(const std::string& name, const std::set<std::string>& prefixes) {
  for (const std::string& p : prefixes)
    if (name.rfind(p, 0) == 0) return true;
  return false;
}

}  // namespace

GateQuantization quantize_gate_weights_int8(GPT& model) {
  NoGradGuard no_grad;
  const std::set<std::string> prefixes = gate_prefixes(model.config());
  GateQuantization q;
  for (auto& [name, p] : model.named_parameters()) {
    q.model_bytes += 4 * p.numel();
    // A gate parameter starts with its gate's prefix; a gate's prefix is never another's (the
    // block's only gate owns attn.gate. alone, beside others each owns attn.gate.<kind>.).
    if (p.dim() != 2 || !under_a_prefix(name, prefixes)) continue;
    const std::int64_t rows = p.size(0), cols = p.size(1);
    std::vector<double> w = p.to_vector();
    for (std::int64_t r = 0; r < rows; ++r) {
      double* row = w.data() + r * cols;
      double amax = 0;
      for (std::int64_t c = 0; c < cols; ++c) amax = std::max(amax, std::abs(row[c]));
      if (amax == 0) continue;  // an all-zero row stays exactly zero (any scale stores it)
      // The scale is stored in f32, so round with the f32 value an int8 store would keep.
      const double s = static_cast<double>(static_cast<float>(amax / 127.0));
      for (std::int64_t c = 0; c < cols; ++c) {
        const double back = s * std::clamp(std::nearbyint(row[c] / s), -127.0, 127.0);
        q.max_abs_error = std::max(q.max_abs_error, std::abs(back - row[c]));
        row[c] = back;
      }
    }
    p.copy_from(Tensor::from(w, p.shape(), p.dtype()).to(p.device()));
    ++q.tensors;
    q.values += p.numel();
    q.rows += rows;
  }
  q.bytes_f32 = 4 * q.values;
  q.bytes_int8 = q.values + 4 * q.rows;
  if (q.tensors == 0)
    throw ValueError(std::string("--gate-int8: the model has no gate weights to quantise (") +
                     (model.config().has_gates() ? "its gates have no weight matrix" : "it has no gates") + ")");
  return q;
}

}  // namespace gattn::models
