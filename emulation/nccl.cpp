// NCCL for a world of one over the emulated device: a communicator can only have one rank, and
// every collective is then a copy from the send to the receive buffer (or nothing, in place). It
// runs the NCCL communicator's own code, its non-blocking init and teardown included, in the
// emulation build; several ranks need several real processes and GPUs.
#include <nccl.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "emulation/device_arena.h"
#include "emulation/runtime_state.h"

struct ncclComm {
  int device = 0;
};

namespace {

ncclResult_t refuse(ncclResult_t r, const std::string& why) {
  std::fprintf(stderr, "gattn CUDA emulation: NCCL: %s\n", why.c_str());
  return r;
}

std::size_t type_size(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
    default:
      return 0;
  }
}

// recv = send for `bytes` bytes, after checking both are device memory.
ncclResult_t copy(const void* send, void* recv, std::size_t bytes, ncclComm_t comm, cudaStream_t stream,
                  const char* call) {
  if (!comm) return refuse(ncclInvalidArgument, std::string(call) + ": null communicator");
  if (!gattn::emu::valid_stream(stream))
    return refuse(ncclInvalidArgument, std::string(call) + ": invalid or destroyed stream");
  gattn::emu::queue_work(stream);
  std::string why;
  if (bytes && (!gattn::emu::device_accessible_range(send, bytes, why) ||
                !gattn::emu::device_accessible_range(recv, bytes, why)))
    return refuse(ncclInvalidArgument, std::string(call) + ": " + why);
  gattn::emu::DeviceAccess access;
  if (bytes && send != recv) std::memmove(recv, send, bytes);
  return ncclSuccess;
}

}  // namespace

ncclResult_t ncclGetVersion(int* version) {
  if (!version) return ncclInvalidArgument;
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

const char* ncclGetErrorString(ncclResult_t r) {
  switch (r) {
    case ncclSuccess:
      return "no error";
    case ncclInvalidArgument:
      return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
      return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "unhandled error";
  }
}

const char* ncclGetLastError(ncclComm_t) { return ""; }

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  std::memset(id, 0, sizeof *id);
  std::memcpy(id->internal, "gattn-emulated", 14);
  return ncclSuccess;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId, int rank, ncclConfig_t*) {
  if (nranks != 1 || rank != 0)
    return refuse(ncclInvalidArgument, "the emulated NCCL has one rank; asked for rank " + std::to_string(rank) +
                                           " of " + std::to_string(nranks));
  auto* c = new ncclComm;
  cudaGetDevice(&c->device);
  *comm = c;
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  return ncclCommInitRankConfig(comm, nranks, id, rank, nullptr);
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) { return comm ? ncclSuccess : ncclInvalidArgument; }

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* state) {
  if (!comm) return ncclInvalidArgument;
  *state = ncclSuccess;
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t, int* count) {
  *count = 1;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t, int* rank) {
  *rank = 0;
  return ncclSuccess;
}

ncclResult_t ncclGroupStart() { return ncclSuccess; }
ncclResult_t ncclGroupEnd() { return ncclSuccess; }

ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t,
                           ncclComm_t comm, cudaStream_t stream) {
  return copy(send, recv, count * type_size(type), comm, stream, "ncclAllReduce");
}

ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count, ncclDataType_t type, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  if (root != 0)
    return refuse(ncclInvalidArgument, "ncclBroadcast: root " + std::to_string(root) + " in a world of one");
  return copy(send, recv, count * type_size(type), comm, stream, "ncclBroadcast");
}

ncclResult_t ncclReduceScatter(const void* send, void* recv, size_t recv_count, ncclDataType_t type, ncclRedOp_t,
                               ncclComm_t comm, cudaStream_t stream) {
  return copy(send, recv, recv_count * type_size(type), comm, stream, "ncclReduceScatter");
}

ncclResult_t ncclAllGather(const void* send, void* recv, size_t send_count, ncclDataType_t type, ncclComm_t comm,
                           cudaStream_t stream) {
  return copy(send, recv, send_count * type_size(type), comm, stream, "ncclAllGather");
}
