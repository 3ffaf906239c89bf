// A world of one: the reductions of one rank's values are those values.
#include "framework/dist/single_communicator.h"

#include <cstring>

#include "core/cuda/copy.h"

namespace gattn::dist {

namespace {

class DoneWork final : public Work {
 public:
  void wait() override {}
};

void check_root(int root, const std::string& what) {
  if (root != 0) throw DistError("dist: " + what + ": root rank " + std::to_string(root) + " in a world of one");
}

// Reduce-scatter and all-gather of one rank are copies of its own block. In place (dst == src, as
// ZeRO-1's all-gather of a world of one is) there is nothing to copy. Device buffers are copied on
// the compute stream, so a CUDA world of one runs ZeRO-1 without NCCL.
void copy(void* dst, const void* src, std::size_t bytes, Device device) {
  if (dst == src || bytes == 0) return;
  if (device == Device::cpu)
    std::memmove(dst, src, bytes);  // memmove: the blocks may overlap
  else
    cuda::copy_bytes(dst, device, src, device, bytes);
}

}  // namespace

std::unique_ptr<Work> SingleCommunicator::all_reduce_async(void*, std::int64_t, DType, ReduceOp, const std::string&) {
  return std::make_unique<DoneWork>();
}

void SingleCommunicator::broadcast(void*, std::int64_t, DType, int root, const std::string& what) {
  check_root(root, what);
}

void SingleCommunicator::reduce_scatter(const void* send, void* recv, std::int64_t recv_count, DType dtype, ReduceOp,
                                        const std::string&) {
  copy(recv, send, static_cast<std::size_t>(recv_count) * dtype_size(dtype), device_);
}

void SingleCommunicator::all_gather(const void* send, void* recv, std::int64_t send_count, DType dtype,
                                    const std::string&) {
  copy(recv, send, static_cast<std::size_t>(send_count) * dtype_size(dtype), device_);
}

void SingleCommunicator::barrier(const std::string&) {}

}  // namespace gattn::dist
