// make_norm, make_qk_norm: the norm a config asks for.
#include "models/parts/norm.h"

namespace gattn::models {

std::shared_ptr<nn::Norm> make_norm(const ModelConfig& config, std::int64_t dim) {
  if (config.rms_norm()) return std::make_shared<nn::RmsNorm>(dim, config.norm_eps, config.norm_offset, config.dtype);
  return std::make_shared<nn::LayerNorm>(dim, config.norm_eps, config.dtype);
}

std::shared_ptr<nn::Norm> make_qk_norm(const ModelConfig& config) {
  if (config.qk_norm == kQkNormNone) return nullptr;
  return std::make_shared<nn::RmsNorm>(config.head_dim(), config.norm_eps, config.norm_offset, config.dtype);
}

}  // namespace gattn::models
