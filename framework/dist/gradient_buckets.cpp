// Bucketed gradient all-reduce: pack, launch non-blocking, wait, unpack as the mean.
#include "framework/dist/gradient_buckets.h"

#include <cstring>

#include "framework/dist/sharding.h"
#include "ops/elementwise.h"

namespace gattn::dist {

GradientBuckets::GradientBuckets(NamedParameters params, Communicator& comm, std::int64_t bucket_elements,
                                 DType wire_dtype)
    : params_(std::move(params)), comm_(comm), wire_dtype_(wire_dtype) {
  if (wire_dtype != DType::f32 && wire_dtype != DType::bf16)
    throw DistError(std::string("dist: gradient buckets travel as f32 or bf16, not ") + dtype_name(wire_dtype));
  std::vector<std::int64_t> sizes;
  for (const auto& [name, p] : params_) {
    if (p.dtype() != DType::f32 || p.device() != comm_.device())
      throw DistError("dist: parameter " + name + " is " + p.str() + " on " + device_name(p.device()) +
                      "; gradient buckets hold f32 tensors on " + device_name(comm_.device()));
    sizes.push_back(p.numel());
    index_of_leaf_.emplace(&p.impl(), sizes.size() - 1);
  }
  bucket_of_.resize(params_.size());
  reported_.assign(params_.size(), false);
  for (auto& members : plan_buckets(sizes, bucket_elements)) {
    Bucket b;
    std::int64_t n = 0;
    for (std::size_t i : members) {
      bucket_of_[i] = buckets_.size();
      n += sizes[i];
    }
    b.flat = Tensor::zeros({n}, wire_dtype_, comm_.device());
    b.pending = members.size();
    b.members = std::move(members);
    buckets_.push_back(std::move(b));
  }
}

void GradientBuckets::ready(std::size_t index) {
  if (reported_.at(index)) return;
  reported_[index] = true;
  Bucket& b = buckets_[bucket_of_[index]];
  if (--b.pending == 0) launch(bucket_of_[index]);
}

void GradientBuckets::ready_leaf(const TensorImpl& leaf) {
  auto it = index_of_leaf_.find(&leaf);
  if (it != index_of_leaf_.end()) ready(it->second);
}

std::size_t GradientBuckets::buckets_in_flight() const {
  std::size_t n = 0;
  for (const Bucket& b : buckets_) n += b.work != nullptr;
  return n;
}

void GradientBuckets::ready_all() {
  for (std::size_t i = params_.size(); i-- > 0;) ready(i);
}

void GradientBuckets::launch(std::size_t index) {
  Bucket& b = buckets_[index];
  std::int64_t offset = 0;
  for (std::size_t i : b.members) {
    const Tensor& p = params_[i].second;
    Tensor dst = b.flat.alias_rows(offset, offset + p.numel());
    const Tensor g = p.grad();
    if (g.defined())
      dst.copy_from(g.alias({p.numel()}));
    else
      dst.fill(0.0);
    offset += p.numel();
  }
  std::string what = "all-reduce of gradient bucket ";
  what += std::to_string(index);
  b.work = comm_.all_reduce_async(b.flat.raw_data(), b.flat.numel(), wire_dtype_, ReduceOp::sum, what);
}

void GradientBuckets::finish() {
  ready_all();
  const double inv_world = 1.0 / static_cast<double>(comm_.size());
  for (Bucket& b : buckets_) {
    b.work->wait();
    b.work.reset();
    // The mean in f32 whatever travelled (bf16 sums are widened first).
    Tensor sum = b.flat.dtype() == DType::f32 ? b.flat : b.flat.to(DType::f32);
    ops::scale_(sum, inv_world);
    std::int64_t offset = 0;
    for (std::size_t i : b.members) {
      Tensor& p = params_[i].second;
      const Tensor mean = sum.alias_rows(offset, offset + p.numel()).alias(p.shape());
      Tensor g = p.grad();
      if (g.defined())
        g.copy_from(mean);
      else
        p.set_grad(mean.clone());
      offset += p.numel();
    }
    b.pending = b.members.size();
  }
  reported_.assign(params_.size(), false);
}

}  // namespace gattn::dist
