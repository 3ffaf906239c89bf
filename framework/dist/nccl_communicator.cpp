// The NCCL communicator (CUDA builds with NCCL only; elsewhere its factory says what the build lacks). The
// NCCL communicator is non-blocking (ncclConfig_t.blocking = 0): every call may return
// ncclInProgress and is finished by polling ncclCommGetAsyncError, which is where the deadline sits.
#include "framework/dist/nccl_communicator.h"

#include "core/cuda/device.h"

#if defined(GATTN_WITH_CUDA) && defined(GATTN_WITH_NCCL)
#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "core/cuda/error.h"
#include "core/cuda/stream.h"
#endif

namespace gattn::dist {

#if defined(GATTN_WITH_CUDA) && defined(GATTN_WITH_NCCL)

namespace {

using Clock = std::chrono::steady_clock;

ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return ncclFloat32;
    case DType::f64:
      return ncclFloat64;
    case DType::i32:
      return ncclInt32;
    case DType::bf16:
      return ncclBfloat16;
  }
  return ncclFloat32;
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return ncclSum;
    case ReduceOp::max:
      return ncclMax;
    case ReduceOp::min:
      return ncclMin;
  }
  return ncclSum;
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

class NcclCommunicator;

// One enqueued collective: `done` is recorded on the communication stream after it.
class NcclWork final : public Work {
 public:
  NcclWork(NcclCommunicator& comm, std::string what);
  cuda::Event& done() { return done_; }
  void wait() override;

 private:
  NcclCommunicator& comm_;
  std::string what_;
  cuda::Event done_;
  bool finished_ = false;
};

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(MpiCommunicator* bootstrap, const LaunchInfo& launch, double timeout_s)
      : bootstrap_(bootstrap), timeout_(timeout_s) {
    rank_ = bootstrap ? bootstrap->rank() : 0;
    size_ = bootstrap ? bootstrap->size() : 1;
    int devices = 0;
    GATTN_CUDA_CHECK(cudaGetDeviceCount(&devices));
    if (launch.local_rank >= devices) {
      std::string msg = "dist: local rank ";
      msg += std::to_string(launch.local_rank);
      msg += " has no GPU of its own (";
      msg += std::to_string(devices);
      msg += " visible): start at most that many ranks per node";
      throw DistError(msg);
    }
    GATTN_CUDA_CHECK(cudaSetDevice(launch.local_rank));
    stream_ = std::make_unique<cuda::Stream>();
    GATTN_CUDA_CHECK(cudaMalloc(&barrier_buf_, sizeof(float)));

    ncclUniqueId id{};
    if (rank_ == 0) GATTN_NCCL_CHECK(ncclGetUniqueId(&id));
    if (bootstrap_) bootstrap_->broadcast_bytes(&id, sizeof id, 0, "broadcast of the NCCL unique id");
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    const ncclResult_t r = ncclCommInitRankConfig(&comm_, size_, id, rank_, &config);
    if (r != ncclSuccess && r != ncclInProgress) GATTN_NCCL_CHECK(r);
    settle("NCCL communicator set-up");
  }

  ~NcclCommunicator() override {
    if (comm_ != nullptr) {
      if (healthy_) {
        // Flush what is queued, bounded by the timeout; a failure here only ends in an abort.
        ncclResult_t state = ncclCommFinalize(comm_);
        const auto deadline =
            Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_));
        if (state == ncclSuccess || state == ncclInProgress) {
          state = ncclInProgress;
          while (ncclCommGetAsyncError(comm_, &state) == ncclSuccess && state == ncclInProgress &&
                 Clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::microseconds(100));
        }
        healthy_ = state == ncclSuccess;
      }
      if (healthy_)
        ncclCommDestroy(comm_);
      else
        ncclCommAbort(comm_);
    }
    if (barrier_buf_ != nullptr) cudaFree(barrier_buf_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "nccl"; }
  Device device() const override { return Device::cuda; }
  void set_timeout(double seconds) override { timeout_ = seconds; }
  double timeout() const override { return timeout_; }

  std::unique_ptr<Work> all_reduce_async(void* data, std::int64_t count, DType dtype, ReduceOp op,
                                         const std::string& what) override {
    return enqueue(what, [&](cudaStream_t s) {
      return ncclAllReduce(data, data, static_cast<std::size_t>(count), nccl_type(dtype), nccl_op(op), comm_, s);
    });
  }
  using Communicator::broadcast;
  void broadcast(void* data, std::int64_t count, DType dtype, int root, const std::string& what) override {
    enqueue(what, [&](cudaStream_t s) {
      return ncclBroadcast(data, data, static_cast<std::size_t>(count), nccl_type(dtype), root, comm_, s);
    })->wait();
  }
  void reduce_scatter(const void* send, void* recv, std::int64_t recv_count, DType dtype, ReduceOp op,
                      const std::string& what) override {
    enqueue(what, [&](cudaStream_t s) {
      return ncclReduceScatter(send, recv, static_cast<std::size_t>(recv_count), nccl_type(dtype), nccl_op(op), comm_,
                               s);
    })->wait();
  }
  void all_gather(const void* send, void* recv, std::int64_t send_count, DType dtype,
                  const std::string& what) override {
    enqueue(what, [&](cudaStream_t s) {
      return ncclAllGather(send, recv, static_cast<std::size_t>(send_count), nccl_type(dtype), comm_, s);
    })->wait();
  }
  // A one-float all-reduce: NCCL has no barrier of its own, and the MPI bootstrap's would not
  // order the GPU streams.
  void barrier(const std::string& what) override {
    enqueue(what, [&](cudaStream_t s) {
      return ncclAllReduce(barrier_buf_, barrier_buf_, 1, ncclFloat32, ncclSum, comm_, s);
    })->wait();
  }

  // Waits until NCCL is no longer in progress for the last call, within the deadline.
  void settle(const std::string& what) {
    const auto deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_));
    for (;;) {
      ncclResult_t state = ncclSuccess;
      GATTN_NCCL_CHECK(ncclCommGetAsyncError(comm_, &state));
      if (state == ncclSuccess) return;
      if (state != ncclInProgress) fail(what + " failed: " + ncclGetErrorString(state));
      if (Clock::now() >= deadline) timed_out(what);
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  // Polls `done` until the collective finished, NCCL reported an error, or the deadline passed.
  void wait_for(cuda::Event& done, const std::string& what) {
    const auto start = Clock::now();
    const auto deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_));
    for (;;) {
      if (done.query()) break;
      ncclResult_t state = ncclSuccess;
      GATTN_NCCL_CHECK(ncclCommGetAsyncError(comm_, &state));
      if (state != ncclSuccess && state != ncclInProgress) fail(what + " failed: " + ncclGetErrorString(state));
      const auto now = Clock::now();
      if (now >= deadline) timed_out(what);
      if (now - start > std::chrono::milliseconds(1)) std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    // Later kernels (the optimizer) read the result: order the compute stream after it.
    done.block(cuda::compute_stream());
  }

 private:
  template <class Call>
  std::unique_ptr<NcclWork> enqueue(const std::string& what, Call call) {
    if (comm_ == nullptr)
      throw DistError("dist: " + what + ": the NCCL communicator was aborted after an earlier failure");
    // The buffers were written by kernels on the compute stream: the collective starts after them.
    cuda::Event inputs_ready;
    inputs_ready.record(cuda::compute_stream());
    inputs_ready.block(*stream_);
    const ncclResult_t r = call(stream_->handle());
    if (r != ncclSuccess && r != ncclInProgress) fail(what + " failed: " + ncclGetErrorString(r));
    settle(what);
    auto work = std::make_unique<NcclWork>(*this, what);
    work->done().record(*stream_);
    return work;
  }
  [[noreturn]] void fail(const std::string& message) {
    healthy_ = false;
    throw DistError("dist: " + message);
  }
  [[noreturn]] void timed_out(const std::string& what) {
    // Abort now: it unblocks the kernels waiting on the dead peer, so the process can exit.
    healthy_ = false;
    ncclCommAbort(comm_);
    comm_ = nullptr;
    throw DistError("dist: " + what + " did not complete within " + seconds_text(timeout_) +
                    " s (dist.timeout_s): another of the " + std::to_string(size_) + " ranks died or stalled");
  }

  MpiCommunicator* bootstrap_;
  int rank_ = 0, size_ = 1;
  double timeout_;
  ncclComm_t comm_ = nullptr;
  bool healthy_ = true;
  std::unique_ptr<cuda::Stream> stream_;
  void* barrier_buf_ = nullptr;
};

NcclWork::NcclWork(NcclCommunicator& comm, std::string what) : comm_(comm), what_(std::move(what)) {}

void NcclWork::wait() {
  if (finished_) return;
  comm_.wait_for(done_, what_);
  finished_ = true;
}

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(MpiCommunicator* bootstrap, const LaunchInfo& launch,
                                                     double timeout_s) {
  cuda::require_device("the NCCL communicator");
  return std::make_unique<NcclCommunicator>(bootstrap, launch, timeout_s);
}

#else

std::unique_ptr<Communicator> make_nccl_communicator(MpiCommunicator*, const LaunchInfo&, double) {
  cuda::require_device("the NCCL communicator");  // throws when this build has no CUDA
  throw DeviceError("the NCCL communicator: this build has no NCCL (libnccl was not found when gattn was configured)");
}

#endif

}  // namespace gattn::dist
