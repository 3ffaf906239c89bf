// MPI collectives with deadlines: each is started non-blocking and polled with MPI_Test, which
// also drives MPI's progress, backing off from a short spin to millisecond sleeps so a waiting
// rank leaves the (possibly shared) cores to the others.
#include "framework/dist/mpi_communicator.h"

#ifdef GATTN_WITH_MPI
#include <mpi.h>

#include <chrono>
#include <climits>
#include <thread>

#include "framework/dist/bf16_reduce.h"

namespace gattn::dist {

namespace {

using Clock = std::chrono::steady_clock;

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) {
    std::string msg = "MPI error ";
    msg += std::to_string(code);
    return msg;
  }
  return std::string(text, static_cast<std::size_t>(len));
}

void check(int code, const std::string& what) {
  if (code != MPI_SUCCESS) throw DistError("dist: " + what + " failed: " + mpi_error_text(code));
}

MPI_Datatype mpi_type(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return MPI_FLOAT;
    case DType::f64:
      return MPI_DOUBLE;
    case DType::i32:
      return MPI_INT;
    case DType::bf16:
      return MPI_UINT16_T;  // the bits; the arithmetic is bf16_ops()'s
  }
  throw DistError(std::string("dist: MPI reductions take f32, f64, i32 or bf16 buffers, not ") + dtype_name(dtype));
}

// MPI has no bf16 type or reduction, so bf16 buffers travel as 16-bit words reduced by user ops
// (MPI_Op_create) that do the arithmetic of bf16_reduce.h. Created on the first bf16 reduction (MPI
// is initialised by then: only an MpiCommunicator calls this) and freed by finalize().
struct Bf16Ops {
  MPI_Op sum = MPI_OP_NULL, max = MPI_OP_NULL, min = MPI_OP_NULL;
};
Bf16Ops g_bf16_ops;  // one thread calls MPI (MPI_THREAD_FUNNELED), so no lock

template <ReduceOp Op>
void bf16_user_function(void* in, void* inout, int* len, MPI_Datatype*) {
  bf16_combine_into(static_cast<const bf16*>(in), static_cast<bf16*>(inout), *len, Op);
}

const Bf16Ops& bf16_ops() {
  if (g_bf16_ops.sum == MPI_OP_NULL) {
    // commute = 1: each combination is commutative (bf16_combine), so MPI may reorder operands.
    check(MPI_Op_create(&bf16_user_function<ReduceOp::sum>, 1, &g_bf16_ops.sum), "MPI_Op_create (bf16 sum)");
    check(MPI_Op_create(&bf16_user_function<ReduceOp::max>, 1, &g_bf16_ops.max), "MPI_Op_create (bf16 max)");
    check(MPI_Op_create(&bf16_user_function<ReduceOp::min>, 1, &g_bf16_ops.min), "MPI_Op_create (bf16 min)");
  }
  return g_bf16_ops;
}

void free_bf16_ops() {
  for (MPI_Op* op : {&g_bf16_ops.sum, &g_bf16_ops.max, &g_bf16_ops.min})
    if (*op != MPI_OP_NULL) MPI_Op_free(op);  // sets *op to MPI_OP_NULL
}

MPI_Op mpi_op(ReduceOp op, DType dtype) {
  if (dtype == DType::bf16) {
    const Bf16Ops& ops = bf16_ops();
    return op == ReduceOp::max ? ops.max : op == ReduceOp::min ? ops.min : ops.sum;
  }
  switch (op) {
    case ReduceOp::sum:
      return MPI_SUM;
    case ReduceOp::max:
      return MPI_MAX;
    case ReduceOp::min:
      return MPI_MIN;
  }
  return MPI_SUM;
}

int mpi_count(std::int64_t count, const std::string& what) {
  if (count < 0 || count > INT_MAX)
    throw DistError("dist: " + what + ": " + std::to_string(count) + " elements exceed one MPI call's count");
  return static_cast<int>(count);
}

// Polls `request` until it completes or `timeout_s` passes.
void wait_with_deadline(MPI_Request& request, double timeout_s, int size, const std::string& what) {
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  auto pause = std::chrono::microseconds(0);
  for (;;) {
    int done = 0;
    check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what);
    if (done) return;
    const auto now = Clock::now();
    if (now >= deadline) {
      // The request cannot be freed while a peer may still write into it: leave it, the process is
      // about to exit with this error.
      char secs[32];
      std::snprintf(secs, sizeof secs, "%g", timeout_s);
      throw DistError("dist: " + what + " did not complete within " + secs + " s (dist.timeout_s): another of the " +
                      std::to_string(size) + " ranks died or stalled");
    }
    // Spin for the first millisecond (a collective of peers in step is fast), then back off.
    if (now - start > std::chrono::milliseconds(1)) {
      pause = std::min(std::chrono::microseconds(1000), pause + std::chrono::microseconds(50));
      std::this_thread::sleep_for(pause);
    }
  }
}

class MpiWork final : public Work {
 public:
  MpiWork(double timeout_s, int size, std::string what) : timeout_s_(timeout_s), size_(size), what_(std::move(what)) {}
  MPI_Request* request() { return &request_; }
  void wait() override {
    if (request_ == MPI_REQUEST_NULL) return;
    wait_with_deadline(request_, timeout_s_, size_, what_);
  }

 private:
  MPI_Request request_ = MPI_REQUEST_NULL;
  double timeout_s_;
  int size_;
  std::string what_;
};

}  // namespace

MpiCommunicator::MpiCommunicator() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    // Errors come back as codes that become DistError, instead of MPI aborting the job silently.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  }
  check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
}

void MpiCommunicator::finalize() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return;
  free_bf16_ops();  // user ops must not outlive MPI
  MPI_Finalize();
}

std::unique_ptr<Work> MpiCommunicator::all_reduce_async(void* data, std::int64_t count, DType dtype, ReduceOp op,
                                                        const std::string& what) {
  auto work = std::make_unique<MpiWork>(timeout_, size_, what);
  check(MPI_Iallreduce(MPI_IN_PLACE, data, mpi_count(count, what), mpi_type(dtype), mpi_op(op, dtype), MPI_COMM_WORLD,
                       work->request()),
        what);
  return work;
}

void MpiCommunicator::broadcast(void* data, std::int64_t count, DType dtype, int root, const std::string& what) {
  broadcast_bytes(data, static_cast<std::size_t>(count) * dtype_size(dtype), root, what);
}

void MpiCommunicator::broadcast_bytes(void* data, std::size_t bytes, int root, const std::string& what) {
  if (root < 0 || root >= size_) throw DistError("dist: " + what + ": no rank " + std::to_string(root));
  // Chunks of at most INT_MAX bytes: a broadcast of a large model's weights exceeds one int count.
  auto* p = static_cast<char*>(data);
  for (std::size_t done = 0; done < bytes;) {
    const std::size_t n = std::min<std::size_t>(bytes - done, INT_MAX);
    MpiWork chunk(timeout_, size_, what);
    check(MPI_Ibcast(p + done, static_cast<int>(n), MPI_BYTE, root, MPI_COMM_WORLD, chunk.request()), what);
    chunk.wait();
    done += n;
  }
}

void MpiCommunicator::reduce_scatter(const void* send, void* recv, std::int64_t recv_count, DType dtype, ReduceOp op,
                                     const std::string& what) {
  MpiWork work(timeout_, size_, what);
  check(MPI_Ireduce_scatter_block(send, recv, mpi_count(recv_count, what), mpi_type(dtype), mpi_op(op, dtype),
                                  MPI_COMM_WORLD, work.request()),
        what);
  work.wait();
}

void MpiCommunicator::all_gather(const void* send, void* recv, std::int64_t send_count, DType dtype,
                                 const std::string& what) {
  MpiWork work(timeout_, size_, what);
  // Raw bytes: all-gather moves values without arithmetic, so any dtype (bf16 too) travels.
  const std::int64_t bytes = send_count * static_cast<std::int64_t>(dtype_size(dtype));
  check(MPI_Iallgather(send, mpi_count(bytes, what), MPI_BYTE, recv, mpi_count(bytes, what), MPI_BYTE, MPI_COMM_WORLD,
                       work.request()),
        what);
  work.wait();
}

void MpiCommunicator::barrier(const std::string& what) {
  MpiWork work(timeout_, size_, what);
  check(MPI_Ibarrier(MPI_COMM_WORLD, work.request()), what);
  work.wait();
}

}  // namespace gattn::dist

#else  // a build without MPI: a launched multi-rank run stops here with one line

namespace gattn::dist {

MpiCommunicator::MpiCommunicator() {
  throw DistError(
      "dist: this build has no MPI (OpenMPI was not found when gattn was configured); "
      "install it (./scripts/setup.sh) and rebuild to run several ranks");
}
// Unreachable: no MpiCommunicator can be constructed.
std::unique_ptr<Work> MpiCommunicator::all_reduce_async(void*, std::int64_t, DType, ReduceOp, const std::string&) {
  return nullptr;
}
void MpiCommunicator::broadcast(void*, std::int64_t, DType, int, const std::string&) {}
void MpiCommunicator::reduce_scatter(const void*, void*, std::int64_t, DType, ReduceOp, const std::string&) {}
void MpiCommunicator::all_gather(const void*, void*, std::int64_t, DType, const std::string&) {}
void MpiCommunicator::barrier(const std::string&) {}
void MpiCommunicator::broadcast_bytes(void*, std::size_t, int, const std::string&) {}
void MpiCommunicator::finalize() {}

}  // namespace gattn::dist

#endif
