// Row-parallel training on the CPU (train.parallel: rows): the rows of each batch split into equal
// parts, each part's forward and backward on its own thread of the OpenMP pool with one thread for
// every op inside it, and the parameter gradients of the parts added up in part order afterwards.
//
// Why: on CPU-sized models the matrices are small, and splitting each op over the threads pays a
// fork/join per op (hundreds per step) while the non-GEMM ops barely scale within themselves; whole
// parts of the batch on their own threads join once per step and scale every op
// (docs/benchmarks.md, "Row-parallel training"). The math is that of the whole batch: each part's
// loss is weighted by its share of the rows, as data-parallel ranks are; the sums are added in
// another order, so the bits differ from `ops` (and between thread counts), not the values.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "core/tensor/tensor.h"
#include "recipes/common/run_config.h"

namespace gattn::recipes {

// train.parallel resolved for this run: how many row parts each batch splits into (1: every op
// threads on its own, `ops`). `rows` needs device cpu and a train.batch_size divisible by the
// threads (ConfigError otherwise); `auto` takes rows where `rows` would be allowed, there is more
// than one thread, and the parts' own gradient copies ((threads − 1) × the f32 parameters) stay
// within kAutoRowsGradientBytes, else ops.
int row_parts_for(const Config& cfg, Device device, int threads, std::int64_t parameters);

// Every part but the first holds a full copy of the parameter gradients until they are added up,
// and adding them is a pass over each copy: `auto` takes rows only while those copies stay small
// (the models it was measured on hold a few MB; a 124M-parameter model at 2 threads would hold
// 0.5 GB more and is left to ops).
constexpr std::int64_t kAutoRowsGradientBytes = std::int64_t{256} << 20;

// One line for the run's announcement: "row-parallel: 2 parts of 6 rows, one thread each", or "".
std::string describe_row_parts(int parts, std::int64_t batch_size);

// Runs part(p) for every p in [0, parts) side by side on `parts` threads of the OpenMP pool, each
// running its ops on one thread. Part 0 runs on the calling thread and its backward passes add into
// the parameters' .grad as usual; every other part's go into its own autograd::LeafGradSink, added
// into the .grad after all parts have finished, part 1 first. Rethrows the exception of the lowest
// part that threw (after every part has ended). Under --profile-ops the calling thread's part is the
// one timed; the wait for the others and the adding are sections of their own.
void run_row_parts(int parts, const std::function<void(int part)>& part);

}  // namespace gattn::recipes
