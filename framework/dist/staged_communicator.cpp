// Device collectives staged through host memory (see staged_communicator.h). Every collective is
// stage in → host collective → stage out; errors of the host collective (a timeout, a failed MPI
// call) pass through unchanged, and a buffer whose collective failed is not reused (staging_pool.h).
#include "framework/dist/staged_communicator.h"

#include "core/cuda/device.h"

namespace gattn::dist {

namespace {

std::size_t byte_count(std::int64_t count, DType dtype, const std::string& what) {
  if (count < 0) throw DistError("dist: " + what + ": negative element count " + std::to_string(count));
  return static_cast<std::size_t>(count) * dtype_size(dtype);
}

// The host's all-reduce in flight over a staging buffer; wait() copies the result back.
class StagedWork final : public Work {
 public:
  StagedWork(std::unique_ptr<Work> host_work, StagingLease buffer, void* data, std::size_t bytes)
      : host_work_(std::move(host_work)), buffer_(std::move(buffer)), data_(data), bytes_(bytes) {}

  void wait() override {
    if (!host_work_) return;
    host_work_->wait();  // a timeout throws here, the buffer stays on loan (and is leaked)
    buffer_->stage_out(data_, bytes_);
    host_work_.reset();
    buffer_.give_back();
  }

 private:
  std::unique_ptr<Work> host_work_;
  StagingLease buffer_;
  void* data_;
  std::size_t bytes_;
};

// Stages `send` into one host buffer, runs `collective(host_send, host_recv)` into another (separate
// buffers, so a recv block inside send, in place as ZeRO-1 may call it, works too), and stages the
// result out to `recv`.
template <class Collective>
void exchange_through_host(StagingPool& pool, const void* send, std::size_t send_bytes, void* recv,
                           std::size_t recv_bytes, Collective collective) {
  StagingLease send_buffer = pool.acquire(send_bytes);
  send_buffer->stage_in(send, send_bytes);
  StagingLease recv_buffer = pool.acquire(recv_bytes);
  collective(send_buffer->data(), recv_buffer->data());
  recv_buffer->stage_out(recv, recv_bytes);
  send_buffer.give_back();
  recv_buffer.give_back();
}

}  // namespace

StagedCommunicator::StagedCommunicator(Communicator& host, Device device) : host_(host), pool_(device) {
  if (host.device() != Device::cpu)
    throw DistError("dist: a staged communicator needs a host communicator, and " + host.backend() + " works on " +
                    device_name(host.device()) + " buffers");
  if (device == Device::cuda) cuda::require_device("the staged communicator");
}

std::unique_ptr<Work> StagedCommunicator::all_reduce_async(void* data, std::int64_t count, DType dtype, ReduceOp op,
                                                           const std::string& what) {
  const std::size_t bytes = byte_count(count, dtype, what);
  StagingLease buffer = pool_.acquire(bytes);
  buffer->stage_in(data, bytes);
  std::unique_ptr<Work> host_work = host_.all_reduce_async(buffer->data(), count, dtype, op, what);
  return std::make_unique<StagedWork>(std::move(host_work), std::move(buffer), data, bytes);
}

void StagedCommunicator::broadcast(void* data, std::int64_t count, DType dtype, int root, const std::string& what) {
  const std::size_t bytes = byte_count(count, dtype, what);
  StagingLease buffer = pool_.acquire(bytes);
  // Only the root's values travel; on the root the buffer still holds them afterwards.
  const bool is_root = rank() == root;
  if (is_root) buffer->stage_in(data, bytes);
  host_.broadcast(buffer->data(), count, dtype, root, what);
  if (!is_root) buffer->stage_out(data, bytes);
  buffer.give_back();
}

void StagedCommunicator::reduce_scatter(const void* send, void* recv, std::int64_t recv_count, DType dtype, ReduceOp op,
                                        const std::string& what) {
  const std::size_t recv_bytes = byte_count(recv_count, dtype, what);
  const std::size_t send_bytes = recv_bytes * static_cast<std::size_t>(size());
  exchange_through_host(pool_, send, send_bytes, recv, recv_bytes, [&](const void* host_send, void* host_recv) {
    host_.reduce_scatter(host_send, host_recv, recv_count, dtype, op, what);
  });
}

void StagedCommunicator::all_gather(const void* send, void* recv, std::int64_t send_count, DType dtype,
                                    const std::string& what) {
  const std::size_t send_bytes = byte_count(send_count, dtype, what);
  const std::size_t recv_bytes = send_bytes * static_cast<std::size_t>(size());
  exchange_through_host(pool_, send, send_bytes, recv, recv_bytes, [&](const void* host_send, void* host_recv) {
    host_.all_gather(host_send, host_recv, send_count, dtype, what);
  });
}

}  // namespace gattn::dist
