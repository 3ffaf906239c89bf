// The world of one: every collective is the identity (or a copy), nothing can time out.
#pragma once
#include "framework/dist/communicator.h"

namespace gattn::dist {

class SingleCommunicator final : public Communicator {
 public:
  explicit SingleCommunicator(Device device = Device::cpu) : device_(device) {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backend() const override { return "single"; }
  Device device() const override { return device_; }
  void set_timeout(double seconds) override { timeout_ = seconds; }
  double timeout() const override { return timeout_; }

  std::unique_ptr<Work> all_reduce_async(void* data, std::int64_t count, DType dtype, ReduceOp op,
                                         const std::string& what) override;
  using Communicator::broadcast;
  void broadcast(void* data, std::int64_t count, DType dtype, int root, const std::string& what) override;
  void reduce_scatter(const void* send, void* recv, std::int64_t recv_count, DType dtype, ReduceOp op,
                      const std::string& what) override;
  void all_gather(const void* send, void* recv, std::int64_t send_count, DType dtype, const std::string& what) override;
  void barrier(const std::string& what) override;

 private:
  Device device_;
  double timeout_ = 300;
};

}  // namespace gattn::dist
