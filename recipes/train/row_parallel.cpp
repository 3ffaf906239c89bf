#include "recipes/train/row_parallel.h"

#include <omp.h>

#include <exception>
#include <vector>

#include "core/autograd/engine.h"
#include "core/autograd/op_profile.h"
#include "core/tensor/error.h"

namespace gattn::recipes {

int row_parts_for(const Config& cfg, Device device, int threads, std::int64_t parameters) {
  const std::string mode = cfg.get_string("train.parallel");
  if (mode == "ops" || threads <= 1) return 1;
  const std::int64_t batch = cfg.get_int("train.batch_size");
  const bool fits = device == Device::cpu && batch % threads == 0;
  if (mode == "auto") {
    const std::int64_t copies = static_cast<std::int64_t>(threads - 1) * parameters * 4;
    return fits && copies <= kAutoRowsGradientBytes ? threads : 1;
  }
  // rows, asked for explicitly: say why it cannot be had rather than quietly threading the ops.
  if (device != Device::cpu)
    throw ConfigError(cfg.where("train.parallel") +
                      ": train.parallel 'rows' is for device cpu (a GPU runs each op on the whole batch); use "
                      "auto or ops");
  if (!fits)
    throw ConfigError(cfg.where("train.parallel") + ": train.parallel 'rows' splits train.batch_size " +
                      std::to_string(batch) + " into one part per thread, and " + std::to_string(threads) +
                      " threads do not divide it; make batch_size a multiple of " + std::to_string(threads) +
                      " or use auto");
  return threads;
}

std::string describe_row_parts(int parts, std::int64_t batch_size) {
  if (parts <= 1) return "";
  std::string s = "row-parallel: ";
  s.append(std::to_string(parts)).append(" parts of ").append(std::to_string(batch_size / parts));
  return s.append(" rows, one thread each (train.parallel)");
}

void run_row_parts(int parts, const std::function<void(int)>& part) {
  std::vector<autograd::LeafGradSink> sinks(static_cast<std::size_t>(parts));
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(parts));
#pragma omp parallel num_threads(parts)
  {
    // The ops of a part run on this thread alone: nested parallel regions get a team of one, and
    // oneDNN and OpenBLAS see one thread. (An ICV of this implicit task: the caller's stays.)
    omp_set_num_threads(1);
    // A team smaller than asked for (a thread limit) still runs every part, some threads two.
    const int team = omp_get_num_threads();
    for (int p = omp_get_thread_num(); p < parts; p += team) {
      const auto at = static_cast<std::size_t>(p);
      autograd::set_leaf_grad_sink(p == 0 ? nullptr : &sinks[at]);
      try {
        part(p);
      } catch (...) {
        errors[at] = std::current_exception();
      }
      autograd::set_leaf_grad_sink(nullptr);
    }
    const autograd::profile::Section wait("(row parts: waiting)");
#pragma omp barrier
  }
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  const autograd::profile::Section add("(row parts: adding gradients)");
  for (std::size_t p = 1; p < sinks.size(); ++p) sinks[p].add_into_leaves();
}

}  // namespace gattn::recipes
