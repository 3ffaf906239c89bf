// Launchers of the fused flash-attention backward (the kernels and their math:
// flash_bwd_kernels.cuh): D = rowsum(dO ∘ O), then dK/dV, then dQ, on one stream.
#include <cuda_runtime.h>

#include <cstdint>

#include "core/cuda/launch.cuh"
#include "core/tensor/error.h"
#include "ops/attention/cuda/flash_attention.h"
#include "ops/attention/cuda/flash_bwd_kernels.cuh"
#include "ops/cuda/scratch.h"

namespace gattn::cuda {

namespace flash {
namespace {

template <class Kernel>
void set_smem(Kernel* kernel, int bytes) {
  if (bytes > 48 * 1024)
    GATTN_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
}

template <int D, class In>
void launch_bwd(const FlashParams& p, const FlashBackwardInputs& in, const FlashBackwardOutputs& g, const float* Drow,
                CUstream_st* stream) {
  constexpr int smem = bwd_smem_bytes<D>();
  const unsigned heads = static_cast<unsigned>(p.B * p.H), kv_heads = static_cast<unsigned>(p.B * p.H_kv);
  // dK/dV: one block per 64 keys of a key/value head (its group's query heads inside); dQ: one
  // block per 64 queries of a query head.
  const unsigned key_blocks = static_cast<unsigned>(flash_key_blocks(p.Tk));
  const unsigned query_blocks = static_cast<unsigned>((p.Tq + kBlockRows - 1) / kBlockRows);
  auto* dkdv = flash_bwd_dkdv_kernel<D, In>;
  set_smem(dkdv, smem);
  launch(dkdv, dim3(key_blocks, kv_heads), kThreads, smem, stream, p, in, g, Drow);
  GATTN_CUDA_LAUNCH_CHECK("flash_bwd_dkdv_kernel");
  auto* dq = flash_bwd_dq_kernel<D, In>;
  set_smem(dq, smem);
  launch(dq, dim3(query_blocks, heads), kThreads, smem, stream, p, in, g, Drow);
  GATTN_CUDA_LAUNCH_CHECK("flash_bwd_dq_kernel");
}

template <class In>
void dispatch_bwd(const FlashParams& p, const FlashBackwardInputs& in, const FlashBackwardOutputs& g,
                  CUstream_st* stream) {
  const long long rows = p.B * p.H * p.Tq;
  Scratch Drow(static_cast<std::size_t>(rows) * sizeof(float));
  const int threads = 256;
  const long long want = (rows + threads / 32 - 1) / (threads / 32);
  const unsigned grid = static_cast<unsigned>(want < 65535 * 16 ? want : 65535 * 16);
  launch(flash_bwd_rowdot_kernel<In>, grid, threads, 0, stream, static_cast<const In*>(in.out),
         static_cast<const In*>(in.d_out), in, p, Drow.as<float>(), rows, static_cast<int>(p.d));
  GATTN_CUDA_LAUNCH_CHECK("flash_bwd_rowdot_kernel");
  switch (p.d) {
    case 16:
      return launch_bwd<16, In>(p, in, g, Drow.as<float>(), stream);
    case 32:
      return launch_bwd<32, In>(p, in, g, Drow.as<float>(), stream);
    case 64:
      return launch_bwd<64, In>(p, in, g, Drow.as<float>(), stream);
    case 128:
      return launch_bwd<128, In>(p, in, g, Drow.as<float>(), stream);
    default:
      throw ValueError("flash_attention_backward: unsupported head dim " + std::to_string(p.d));
  }
}

}  // namespace
}  // namespace flash

long long flash_key_blocks(long long T) { return (T + flash::kBlockRows - 1) / flash::kBlockRows; }

void flash_attention_backward(const FlashParams& params, const FlashBackwardInputs& in, const FlashBackwardOutputs& g,
                              CUstream_st* stream) {
  flash::check_grid(params, "flash_attention_backward");
  // The forward's pruning plan, rebuilt from the same inputs.
  FlashParams p = params;
  const bool prune = p.prune_threshold > 0 && p.causal;
  Scratch plan(prune ? static_cast<std::size_t>(flash_prune_plan_size(p)) : 0);
  if (prune) {
    flash_prune_plan(p, plan.as<std::uint8_t>(), nullptr, stream);
    p.tile_plan = plan.as<std::uint8_t>();
  }
  if (!g.dq || !g.dk || !g.dv || !in.d_out || !in.out || !in.lse)
    throw ValueError("flash_attention_backward: out, lse, d_out, dq, dk and dv are required");
  if (p.elem == FlashElem::bf16)
    flash::dispatch_bwd<std::uint16_t>(p, in, g, stream);
  else
    flash::dispatch_bwd<float>(p, in, g, stream);
}

}  // namespace gattn::cuda
