// ZeRO-1: the owned pieces are views into the parameters, so the shard optimizer updates the
// model's weights in place and the all-gather only has to bring the other ranks' ranges.
#include "framework/dist/zero_adamw.h"

#include <cmath>

#include "framework/io/errors.h"
#include "ops/elementwise.h"

namespace gattn::dist {

namespace {

Tensor flat_view(const Tensor& p) { return p.detach().alias({p.numel()}); }

}  // namespace

ZeroAdamW::ZeroAdamW(optim::AdamW::NamedParameters params, optim::AdamWOptions options, Communicator& comm)
    : params_(std::move(params)), comm_(comm) {
  std::vector<std::string> names;
  for (const auto& [name, p] : params_) {
    if (!p.defined() || p.dtype() != DType::f32 || p.device() != comm_.device())
      throw DistError("dist: ZeRO-1 shards f32 parameters on " + std::string(device_name(comm_.device())) +
                      "; parameter " + name + " is not one");
    names.push_back(name);
    groups_.push_back(optim::group_for(name, options.groups));
    flat_ranges_.push_back({total_, total_ + p.numel()});
    total_ += p.numel();
  }
  optim::check_globs_match(options.groups, names);
  options.require_glob_matches = false;  // this rank's shard may hold no parameter of some group

  slots_ = shard_size(total_, comm_.size());
  shard_ = shard_of(total_, comm_.size(), comm_.rank());
  optim::AdamW::NamedParameters owned;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const Range local = overlap_local(flat_ranges_[i], shard_);
    if (local.size() == 0) continue;
    pieces_.push_back({i, local, flat_ranges_[i].begin + local.begin - shard_.begin});
    owned.emplace_back(params_[i].first, flat_view(params_[i].second).alias_rows(local.begin, local.end));
  }
  shard_opt_ = std::make_unique<optim::AdamW>(std::move(owned), std::move(options));
  flat_ = Tensor::zeros({slots_ * comm_.size()}, DType::f32, comm_.device());
  shard_buf_ = Tensor::zeros({slots_}, DType::f32, comm_.device());
}

// Every step below is a tensor op, so the buffers may live on the CPU or on a CUDA device.
void ZeroAdamW::reduce_scatter_gradients() {
  for (std::size_t i = 0; i < params_.size(); ++i) {
    Tensor dst = flat_.alias_rows(flat_ranges_[i].begin, flat_ranges_[i].end);
    const Tensor g = params_[i].second.grad();
    if (g.defined())
      dst.copy_from(g.alias({g.numel()}));
    else
      dst.fill(0.0);  // a parameter without a gradient contributes zeros, as in dist.zero: 0
  }
  if (total_ < flat_.numel()) flat_.alias_rows(total_, flat_.numel()).fill(0.0);  // the last shard's padding
  comm_.reduce_scatter(flat_.raw_data(), shard_buf_.raw_data(), slots_, DType::f32, ReduceOp::sum,
                       "reduce-scatter of the gradients");
  // The mean: times the f32 1/world, the value the gradients were always scaled by.
  ops::scale_(shard_buf_, static_cast<double>(1.0f / static_cast<float>(comm_.size())));
  // Each piece's grad is a fresh tensor holding its slice of the mean (the views themselves are
  // not autograd leaves, so nothing else writes into them).
  const auto& owned = shard_opt_->named_parameters();
  for (std::size_t k = 0; k < pieces_.size(); ++k) {
    Tensor piece = owned[k].second;
    piece.set_grad(shard_buf_.alias_rows(pieces_[k].slot, pieces_[k].slot + pieces_[k].local.size()).clone());
  }
}

double ZeroAdamW::clip_grad_norm() {
  const double local = shard_opt_->grad_sum_of_squares();
  const double norm = std::sqrt(comm_.all_reduce_host({local}, ReduceOp::sum, "all-reduce of the gradient norm")[0]);
  const double clip = shard_opt_->options().grad_clip;
  if (clip > 0.0 && std::isfinite(norm) && norm > clip) shard_opt_->scale_grads(clip / norm);
  return norm;
}

void ZeroAdamW::pack_shard(const std::vector<Tensor>& of_piece) {
  shard_buf_.fill(0.0);
  for (std::size_t k = 0; k < pieces_.size(); ++k)
    shard_buf_.alias_rows(pieces_[k].slot, pieces_[k].slot + pieces_[k].local.size()).copy_from(of_piece[k]);
}

const Tensor& ZeroAdamW::all_gather_flat(const std::string& what) {
  comm_.all_gather(shard_buf_.raw_data(), flat_.raw_data(), slots_, DType::f32, what);
  return flat_;
}

void ZeroAdamW::step(std::int64_t global_step) {
  shard_opt_->step(global_step);
  std::vector<Tensor> values;
  for (const auto& [name, piece] : shard_opt_->named_parameters()) values.push_back(piece);
  pack_shard(values);
  const Tensor& flat = all_gather_flat("all-gather of the updated weights");
  for (std::size_t i = 0; i < params_.size(); ++i) {
    Tensor dst = flat_view(params_[i].second);
    dst.copy_from(flat.alias_rows(flat_ranges_[i].begin, flat_ranges_[i].end));
  }
}

void ZeroAdamW::zero_grad() {
  for (auto& [name, p] : params_) p.zero_grad();
  shard_opt_->zero_grad();
}

std::string ZeroAdamW::first_non_finite_grad() const { return shard_opt_->first_non_finite_grad(); }

OptimizerSnapshot ZeroAdamW::gather_state() {
  OptimizerSnapshot out;
  for (std::size_t i = 0; i < params_.size(); ++i) out.push_back({params_[i].first, groups_[i], Tensor(), Tensor(), 0});
  const auto& owned = shard_opt_->named_parameters();
  for (int moment = 0; moment < 2; ++moment) {
    std::vector<Tensor> values;
    for (const auto& [name, piece] : owned) {
      const optim::ParamState& s = shard_opt_->state(name);
      values.push_back(moment == 0 ? s.exp_avg : s.exp_avg_sq);
    }
    pack_shard(values);
    const Tensor& flat = all_gather_flat(moment == 0 ? "all-gather of exp_avg" : "all-gather of exp_avg_sq");
    for (std::size_t i = 0; i < params_.size(); ++i) {
      Tensor full =
          flat.alias_rows(flat_ranges_[i].begin, flat_ranges_[i].end).clone().alias(params_[i].second.shape());
      (moment == 0 ? out[i].exp_avg : out[i].exp_avg_sq) = full;
    }
  }
  // Step counts: a parameter's pieces all advance together, so the maximum over ranks (0 where a
  // rank owns none of it) is its count.
  std::vector<double> t(params_.size(), 0.0);
  for (std::size_t k = 0; k < pieces_.size(); ++k)
    t[pieces_[k].param] = static_cast<double>(shard_opt_->state(owned[k].first).t);
  t = comm_.all_reduce_host(std::move(t), ReduceOp::max, "all-reduce of the optimizer step counts");
  for (std::size_t i = 0; i < params_.size(); ++i) out[i].t = static_cast<std::int64_t>(t[i]);
  return out;
}

void ZeroAdamW::load_state(const OptimizerSnapshot& state) {
  if (state.size() != params_.size()) {
    std::string msg = "ZeRO-1: the optimizer state holds ";
    msg.append(std::to_string(state.size())).append(" parameters, the model ").append(std::to_string(params_.size()));
    throw CheckpointError(msg);
  }
  for (const Piece& piece : pieces_) {
    const ParamMoments& m = state[piece.param];
    const std::string& name = params_[piece.param].first;
    if (m.name != name)
      throw CheckpointError("ZeRO-1: optimizer state for '" + m.name + "' where '" + name + "' was expected");
    optim::ParamState& s = shard_opt_->state(name);
    s.exp_avg.copy_from(flat_view(m.exp_avg).alias_rows(piece.local.begin, piece.local.end));
    s.exp_avg_sq.copy_from(flat_view(m.exp_avg_sq).alias_rows(piece.local.begin, piece.local.end));
    s.t = m.t;
  }
}

}  // namespace gattn::dist
