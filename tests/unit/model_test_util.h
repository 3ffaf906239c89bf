// Helpers for the model tests (test_gates.cpp, test_gpt.cpp): tiny configs, token batches, weight
// copies between models, and a whole-model gradcheck over every parameter in f64.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "core/tensor/random.h"
#include "framework/runtime/threads.h"
#include "models/gating/registry.h"
#include "models/gpt.h"
#include "models/kv_cache.h"
#include "ops/shape.h"
#include "test_util.h"

namespace gattn::test {

// A model small enough to gradcheck in f64: V=5, block 6, 2 layers, 2 heads of 2 dims.
inline models::ModelConfig tiny_config(std::string kind, DType dtype = DType::f64) {
  models::ModelConfig c;
  c.vocab_size = 5;
  c.block_size = 6;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 4;
  c.gate.kind = kind;
  c.gate.options["windows"] = {0, 2};
  c.gate.options["top_k"] = 1;
  c.dtype = dtype;
  return c;
}

inline Tensor tokens(std::int64_t B, std::int64_t T, std::int64_t V, std::uint64_t seed) {
  Tensor t = Tensor::empty({B, T}, DType::i32);
  Generator g(seed, 7);
  g.randint_(t, V);
  return t;
}

// Copies every non-gate parameter of `src` into the parameter of the same name in `dst` (the
// weights all gate kinds share; the gates' own parameters stay as they are).
inline void copy_shared_parameters(models::GPT& src, models::GPT& dst) {
  for (auto& [name, p] : src.named_parameters())
    if (name.find("attn.gate.") == std::string::npos && name.find("attn.router.") == std::string::npos)
      dst.parameter(name).copy_from(p);
}

// Adds normal(0, 0.8) noise to every gate and router parameter: gates away from their neutral
// start, router logits far enough apart that a small perturbation never changes the top-k.
inline void perturb_gate_parameters(models::GPT& m, std::uint64_t seed) {
  Generator gen(seed, 3);
  for (auto& [name, p] : m.named_parameters())
    if (name.find("attn.gate.") != std::string::npos || name.find("attn.router.") != std::string::npos) {
      Tensor noise = Tensor::empty(p.shape(), p.dtype());
      gen.normal_(noise, 0.0, 0.8);
      std::vector<double> a = p.to_vector(), b = noise.to_vector();
      for (std::size_t i = 0; i < a.size(); ++i) a[i] += b[i];
      p.copy_from(Tensor::from(a, p.shape(), p.dtype()));
    }
}

// none and every registered gate kind.
inline const std::vector<std::string>& all_gate_kinds() {
  static const std::vector<std::string> kinds = [] {
    std::vector<std::string> out{models::kNoGate};
    for (const models::GateKindSpec* k : models::gate_kinds()) out.push_back(k->name);
    return out;
  }();
  return kinds;
}

// d objective / d parameter for every parameter of an f64 model: autograd against central
// differences that perturb the parameter in place. `objective` runs a fresh forward each call
// (reset any noise state inside it for a deterministic function).
inline ::testing::AssertionResult model_grads_ok(models::GPT& model, const std::function<Tensor()>& objective,
                                                 double eps = 1e-6, double atol = 1e-6, double rtol = 1e-4) {
  // Thousands of tiny forwards: thread fork/join would dominate (10× slower on a loaded machine).
  struct OneThread {
    int previous = num_threads();
    OneThread() { set_num_threads(1); }
    ~OneThread() { set_num_threads(previous); }
  } one_thread;
  model.zero_grad();
  Tensor loss = objective();
  if (!loss.grad_fn()) return ::testing::AssertionFailure() << "objective has no autograd history";
  loss.backward();
  NoGradGuard no_grad;
  std::ostringstream failures;
  int n_fail = 0;
  std::int64_t checked = 0;
  for (auto& [name, p] : model.named_parameters()) {
    if (p.dtype() != DType::f64) return ::testing::AssertionFailure() << name << " is " << p.str() << ", expected f64";
    Tensor g = p.grad();
    double* x = p.data<double>();
    for (std::int64_t k = 0; k < p.numel(); ++k) {
      const double saved = x[k];
      x[k] = saved + eps;
      const double plus = objective().item();
      x[k] = saved - eps;
      const double minus = objective().item();
      x[k] = saved;
      const double numeric = (plus - minus) / (2 * eps);
      const double analytic = g.defined() ? g.at(k) : 0.0;
      ++checked;
      if (!(std::abs(analytic - numeric) <= atol + rtol * std::abs(numeric)) && n_fail++ < 10)
        failures << name << "[" << k << "]: analytic " << analytic << " numeric " << numeric << "\n";
    }
  }
  if (n_fail)
    return ::testing::AssertionFailure() << n_fail << " of " << checked << " elements differ:\n" << failures.str();
  return ::testing::AssertionSuccess();
}

// The cached-forward check of a position scheme: `c` made the cached tests' model (block 11,
// vocabulary 7, windows [0, 3]; gate parameters perturbed, eval mode), two sequences of 11 tokens
// and their full-forward logits.
struct CachedCase {
  models::ModelConfig config;
  std::unique_ptr<models::GPT> model;
  Tensor idx, full;
};
inline CachedCase cached_case(models::ModelConfig c) {
  c.block_size = 11;
  c.vocab_size = 7;
  c.gate.options["windows"] = {0, 3};
  CachedCase out{c, std::make_unique<models::GPT>(c, 3), tokens(2, 11, c.vocab_size, 5), Tensor()};
  perturb_gate_parameters(*out.model, 11);
  out.model->eval();
  NoGradGuard no_grad;
  out.full = out.model->forward(out.idx).logits;
  return out;
}

// Feeds the case's tokens through a fresh KV cache in `chunks`, the first at absolute position
// `start`, and expects each chunk's logits to equal the full forward's (within atol, rtol).
inline void expect_cached_equals_full(CachedCase& k, std::int64_t start, const std::vector<std::int64_t>& chunks,
                                      double atol, double rtol) {
  models::KVCache cache(k.config, k.idx.size(0));
  std::int64_t pos = 0;
  for (std::int64_t chunk : chunks) {
    Tensor logits = k.model->forward_cached(ops::slice(k.idx, 1, pos, pos + chunk), cache, start + pos);
    EXPECT_TRUE(all_close(logits, ops::slice(k.full, 1, pos, pos + chunk), atol, rtol))
        << "positions " << start + pos << " … " << start + pos + chunk - 1;
    pos += chunk;
  }
}

}  // namespace gattn::test
