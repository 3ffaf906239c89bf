// A world of N ranks inside one test process: each rank is a thread with its own ThreadCommunicator,
// and the collectives meet at a std::barrier. Lets the unit tests check sharding and bucket logic
// at several world sizes without MPI (the MPI path itself is tested by tests/integration/cli_dist_*).
#pragma once
#include <barrier>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "framework/dist/bf16_reduce.h"
#include "framework/dist/communicator.h"

namespace gattn::testing {

class ThreadWorld {
 public:
  explicit ThreadWorld(int size) : size_(size), sync_(size), slots_(static_cast<std::size_t>(size)) {}
  int size() const { return size_; }
  // Runs body(comm) on every rank, each in its own thread; rethrows the first failure.
  void run(const std::function<void(dist::Communicator&)>& body);

 private:
  friend class ThreadCommunicator;
  int size_;
  std::barrier<> sync_;
  std::vector<const void*> slots_;
};

class ThreadCommunicator final : public dist::Communicator {
 public:
  ThreadCommunicator(ThreadWorld& world, int rank) : world_(world), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return world_.size_; }
  std::string backend() const override { return "threads"; }
  Device device() const override { return Device::cpu; }
  void set_timeout(double) override {}
  double timeout() const override { return 0; }

  std::unique_ptr<dist::Work> all_reduce_async(void* data, std::int64_t count, DType dtype, dist::ReduceOp op,
                                               const std::string&) override {
    // Every rank reduces all ranks' buffers into a private copy, then (after all have read) writes it.
    auto result = exchange(
        data,
        [&](std::vector<double>& acc) {
          for (int r = 0; r < size(); ++r)
            for (std::int64_t i = 0; i < count; ++i) {
              const double v = load(world_.slots_[static_cast<std::size_t>(r)], dtype, i);
              acc[static_cast<std::size_t>(i)] = r == 0 ? v : combine(acc[static_cast<std::size_t>(i)], v, op, dtype);
            }
        },
        count);
    for (std::int64_t i = 0; i < count; ++i) store(data, dtype, i, result[static_cast<std::size_t>(i)]);
    world_.sync_.arrive_and_wait();
    return std::make_unique<Done>();
  }
  using dist::Communicator::broadcast;
  void broadcast(void* data, std::int64_t count, DType dtype, int root, const std::string&) override {
    auto result = exchange(
        data,
        [&](std::vector<double>& acc) {
          for (std::int64_t i = 0; i < count; ++i)
            acc[static_cast<std::size_t>(i)] = load(world_.slots_[static_cast<std::size_t>(root)], dtype, i);
        },
        count);
    for (std::int64_t i = 0; i < count; ++i) store(data, dtype, i, result[static_cast<std::size_t>(i)]);
    world_.sync_.arrive_and_wait();
  }
  void reduce_scatter(const void* send, void* recv, std::int64_t n, DType dtype, dist::ReduceOp op,
                      const std::string&) override {
    auto result = exchange(
        send,
        [&](std::vector<double>& acc) {
          for (int r = 0; r < size(); ++r)
            for (std::int64_t i = 0; i < n; ++i) {
              const double v = load(world_.slots_[static_cast<std::size_t>(r)], dtype, rank_ * n + i);
              acc[static_cast<std::size_t>(i)] = r == 0 ? v : combine(acc[static_cast<std::size_t>(i)], v, op, dtype);
            }
        },
        n);
    for (std::int64_t i = 0; i < n; ++i) store(recv, dtype, i, result[static_cast<std::size_t>(i)]);
    world_.sync_.arrive_and_wait();
  }
  void all_gather(const void* send, void* recv, std::int64_t n, DType dtype, const std::string&) override {
    auto result = exchange(
        send,
        [&](std::vector<double>& acc) {
          for (int r = 0; r < size(); ++r)
            for (std::int64_t i = 0; i < n; ++i)
              acc[static_cast<std::size_t>(r * n + i)] = load(world_.slots_[static_cast<std::size_t>(r)], dtype, i);
        },
        n * size());
    for (std::int64_t i = 0; i < n * size(); ++i) store(recv, dtype, i, result[static_cast<std::size_t>(i)]);
    world_.sync_.arrive_and_wait();
  }
  void barrier(const std::string&) override { world_.sync_.arrive_and_wait(); }

 private:
  struct Done : dist::Work {
    void wait() override {}
  };
  // Publishes `mine`, waits for every rank, computes from all slots, waits until all have read.
  template <class F>
  std::vector<double> exchange(const void* mine, F compute, std::int64_t n) {
    world_.slots_[static_cast<std::size_t>(rank_)] = mine;
    world_.sync_.arrive_and_wait();
    std::vector<double> acc(static_cast<std::size_t>(n));
    compute(acc);
    world_.sync_.arrive_and_wait();
    return acc;
  }
  static double load(const void* p, DType dtype, std::int64_t i) {
    switch (dtype) {
      case DType::f32:
        return static_cast<const float*>(p)[i];
      case DType::f64:
        return static_cast<const double*>(p)[i];
      case DType::i32:
        return static_cast<const std::int32_t*>(p)[i];
      case DType::bf16:
        return bf16_to_float(static_cast<const bf16*>(p)[i]);
      default:
        throw DistError("ThreadCommunicator: unsupported dtype");
    }
  }
  static void store(void* p, DType dtype, std::int64_t i, double v) {
    switch (dtype) {
      case DType::f32:
        static_cast<float*>(p)[i] = static_cast<float>(v);
        break;
      case DType::f64:
        static_cast<double*>(p)[i] = v;
        break;
      case DType::i32:
        static_cast<std::int32_t*>(p)[i] = static_cast<std::int32_t>(v);
        break;
      case DType::bf16:
        static_cast<bf16*>(p)[i] = float_to_bf16(static_cast<float>(v));
        break;
      default:
        throw DistError("ThreadCommunicator: unsupported dtype");
    }
  }
  // bf16 rounds after every combination, rank by rank, as MpiCommunicator's bf16 ops do (both call
  // bf16_combine); the values are bf16 already, so the conversions to bf16 are exact.
  static double combine(double a, double b, dist::ReduceOp op, DType dtype) {
    if (dtype == DType::bf16)
      return bf16_to_float(
          dist::bf16_combine(float_to_bf16(static_cast<float>(a)), float_to_bf16(static_cast<float>(b)), op));
    return op == dist::ReduceOp::sum ? a + b : op == dist::ReduceOp::max ? std::max(a, b) : std::min(a, b);
  }
  ThreadWorld& world_;
  int rank_;
};

inline void ThreadWorld::run(const std::function<void(dist::Communicator&)>& body) {
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(size_));
  std::vector<std::thread> threads;
  for (int r = 0; r < size_; ++r)
    threads.emplace_back([&, r] {
      ThreadCommunicator comm(*this, r);
      try {
        body(comm);
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace gattn::testing
