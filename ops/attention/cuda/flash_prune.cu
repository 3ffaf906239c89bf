// Launcher of the pruning plan's passes (the kernels: flash_prune.cuh).
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "core/cuda/launch.cuh"
#include "core/tensor/error.h"
#include "ops/attention/cuda/flash_attention.h"
#include "ops/attention/cuda/flash_prune.cuh"
#include "ops/cuda/scratch.h"

namespace gattn::cuda {

namespace {

unsigned blocks_for(long long n) {
  return static_cast<unsigned>((n + flash::kPruneThreads - 1) / flash::kPruneThreads);
}

}  // namespace

long long flash_prune_plan_size(const FlashParams& p) {
  const long long tile = ops::kPruneTile;
  return p.B * p.H * ((p.Tq + tile - 1) / tile) * ((p.Tk + tile - 1) / tile);
}

void flash_prune_plan(const FlashParams& p, std::uint8_t* plan, long long* counts, CUstream_st* stream) {
  const long long tile = ops::kPruneTile, rows = p.B * p.H * p.Tq;
  const long long key_tiles = p.B * p.H * ((p.Tk + tile - 1) / tile), pairs = flash_prune_plan_size(p);
  Scratch qn(static_cast<std::size_t>(rows) * sizeof(double)), off(static_cast<std::size_t>(rows) * sizeof(double)),
      kn(static_cast<std::size_t>(rows) * sizeof(double));
  Scratch kmax(static_cast<std::size_t>(key_tiles) * sizeof(double)),
      cmax(static_cast<std::size_t>(key_tiles) * sizeof(double));
  if (p.elem == FlashElem::bf16)
    launch(flash::flash_prune_rows_kernel<std::uint16_t>, blocks_for(rows), flash::kPruneThreads, 0, stream, p,
           qn.as<double>(), off.as<double>(), kn.as<double>());
  else
    launch(flash::flash_prune_rows_kernel<float>, blocks_for(rows), flash::kPruneThreads, 0, stream, p, qn.as<double>(),
           off.as<double>(), kn.as<double>());
  GATTN_CUDA_LAUNCH_CHECK("flash_prune_rows_kernel");
  launch(flash::flash_prune_keys_kernel, blocks_for(key_tiles), flash::kPruneThreads, 0, stream, p,
         static_cast<const double*>(kn.as<double>()), kmax.as<double>(), cmax.as<double>());
  GATTN_CUDA_LAUNCH_CHECK("flash_prune_keys_kernel");
  launch(flash::flash_prune_plan_kernel, blocks_for(pairs), flash::kPruneThreads, 0, stream, p,
         static_cast<const double*>(qn.as<double>()), static_cast<const double*>(off.as<double>()),
         static_cast<const double*>(kmax.as<double>()), static_cast<const double*>(cmax.as<double>()), plan);
  GATTN_CUDA_LAUNCH_CHECK("flash_prune_plan_kernel");
  if (!counts) return;
  // The statistics' counts: one small read of the plan (B·H·T²/4096 bytes).
  std::vector<std::uint8_t> host(static_cast<std::size_t>(pairs));
  GATTN_CUDA_CHECK(cudaMemcpyAsync(host.data(), plan, host.size(), cudaMemcpyDeviceToHost, stream));
  GATTN_CUDA_CHECK(cudaStreamSynchronize(stream));
  for (std::uint8_t s : host) {
    counts[0] += s == ops::kTileSkip;
    counts[1] += s == ops::kTileVisit;
  }
}

}  // namespace gattn::cuda
