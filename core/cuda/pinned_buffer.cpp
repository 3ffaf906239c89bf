// PinnedBuffer over cudaHostAlloc (CUDA builds only; see pinned_buffer.h).
#ifdef GATTN_WITH_CUDA
#include "core/cuda/pinned_buffer.h"

#include <cuda_runtime.h>

#include <string>

#include "core/cuda/device.h"
#include "core/cuda/error.h"
#include "core/tensor/tensor.h"

namespace gattn::cuda {

PinnedBuffer::PinnedBuffer(std::size_t bytes) : bytes_(bytes) {
  require_device("PinnedBuffer");
  // Portable: usable by every device's context, which multi-GPU loading in one process will want.
  GATTN_CUDA_CHECK(cudaHostAlloc(&data_, bytes == 0 ? 1 : bytes, cudaHostAllocPortable));
}

PinnedBuffer::~PinnedBuffer() {
  if (!data_) return;
  cudaEventSynchronize(done_.handle());  // no check: a destructor must not throw
  cudaFreeHost(data_);
}

std::size_t PinnedBuffer::check_tensor(const Tensor& t, const char* what) const {
  if (t.device() != Device::cuda)
    throw DeviceError(std::string("PinnedBuffer::") + what + ": expected a CUDA tensor, got a " +
                      device_name(t.device()) + " one");
  const std::size_t n = static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype());
  if (n > bytes_) {
    std::string msg = "PinnedBuffer::";
    msg.append(what).append(": tensor ").append(t.str()).append(" needs ").append(std::to_string(n));
    msg.append(" bytes, the buffer holds ").append(std::to_string(bytes_));
    throw ValueError(msg);
  }
  return n;
}

void PinnedBuffer::upload(Tensor& dst) {
  const std::size_t n = check_tensor(dst, "upload");
  const Stream& stream = compute_stream();
  GATTN_CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), data_, n, cudaMemcpyHostToDevice, stream.handle()));
  done_.record(stream);
}

void PinnedBuffer::upload_bytes(void* dst, std::size_t offset, std::size_t bytes) {
  if (offset + bytes > bytes_)
    throw ValueError("PinnedBuffer::upload_bytes: bytes [" + std::to_string(offset) + ", " +
                     std::to_string(offset + bytes) + ") exceed the buffer's " + std::to_string(bytes_));
  const Stream& stream = compute_stream();
  GATTN_CUDA_CHECK(
      cudaMemcpyAsync(dst, static_cast<const char*>(data_) + offset, bytes, cudaMemcpyHostToDevice, stream.handle()));
  done_.record(stream);
}

void PinnedBuffer::download(const Tensor& src) {
  const std::size_t n = check_tensor(src, "download");
  const Stream& stream = compute_stream();
  GATTN_CUDA_CHECK(cudaMemcpyAsync(data_, src.raw_data(), n, cudaMemcpyDeviceToHost, stream.handle()));
  done_.record(stream);
}

void PinnedBuffer::wait() const { done_.synchronize(); }

}  // namespace gattn::cuda
#endif
