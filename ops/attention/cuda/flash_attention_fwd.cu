// Launcher of the fused flash-attention forward (the kernel: flash_fwd_kernel.cuh).
#include <cuda_runtime.h>

#include <cstdint>

#include "core/cuda/launch.cuh"
#include "core/tensor/error.h"
#include "ops/attention/cuda/flash_attention.h"
#include "ops/attention/cuda/flash_fwd_kernel.cuh"
#include "ops/cuda/scratch.h"

namespace gattn::cuda {

namespace flash {
namespace {

template <int D, class In>
void launch_fwd(const FlashParams& p, const FlashForwardOutputs& o, CUstream_st* stream) {
  constexpr int smem = fwd_smem_bytes<D>();
  auto* kernel = flash_fwd_kernel<D, In>;
  if (smem > 48 * 1024)
    GATTN_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const dim3 grid(static_cast<unsigned>(flash_query_blocks(p.Tq)), static_cast<unsigned>(p.B * p.H));
  launch(kernel, grid, kThreads, smem, stream, p, o);
  GATTN_CUDA_LAUNCH_CHECK("flash_fwd_kernel");
}

template <class In>
void dispatch_fwd(const FlashParams& p, const FlashForwardOutputs& o, CUstream_st* stream) {
  switch (p.d) {
    case 16:
      return launch_fwd<16, In>(p, o, stream);
    case 32:
      return launch_fwd<32, In>(p, o, stream);
    case 64:
      return launch_fwd<64, In>(p, o, stream);
    case 128:
      return launch_fwd<128, In>(p, o, stream);
    default:
      throw ValueError("flash_attention_forward: unsupported head dim " + std::to_string(p.d));
  }
}

}  // namespace
}  // namespace flash

bool flash_head_dim_supported(long long d) { return d == 16 || d == 32 || d == 64 || d == 128; }
long long flash_query_blocks(long long T) { return (T + flash::kBlockQ - 1) / flash::kBlockQ; }

void flash_attention_forward(const FlashParams& params, const FlashForwardOutputs& o, CUstream_st* stream) {
  flash::check_grid(params, "flash_attention_forward");
  FlashParams p = params;
  const bool prune = p.prune_threshold > 0 && p.causal;
  Scratch plan(prune ? static_cast<std::size_t>(flash_prune_plan_size(p)) : 0);
  if (prune) {
    flash_prune_plan(p, plan.as<std::uint8_t>(), o.tile_counts, stream);
    p.tile_plan = plan.as<std::uint8_t>();
  }
  if (p.elem == FlashElem::bf16)
    flash::dispatch_fwd<std::uint16_t>(p, o, stream);
  else
    flash::dispatch_fwd<float>(p, o, stream);
}

}  // namespace gattn::cuda
