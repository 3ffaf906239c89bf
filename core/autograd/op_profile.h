// Where a training step's time goes, op by op: an opt-in wall-clock profile of the autograd graph.
//
// Forward: an op computes its output and then records it (autograd::record), so the time since the
// previous record on this thread is charged to the op being recorded: its kernel plus the model
// code that ran since the previous op (views, checks, allocation). A Section (below) ends with a
// fresh interval, so time spent outside the graph (data, the optimizer) is not charged to an op.
// Backward: each node's backward function is timed by its op name; summing gradients that meet at a
// node and accumulating them into leaves are charged to "(gradient sum)" and "(leaf accumulate)".
// Sections time spans that are not ops (the optimizer step, clipping, the data).
//
// Off by default: every hook is one relaxed load and a branch. Only the thread that enabled the
// profile is recorded: ops thread inside their kernels, and when row-parallel training runs parts of
// the batch on other threads, their ops are not counted (the owner's part stands for them, and the
// trainer times its wait for the others as a section).
#pragma once
#include <cstdint>
#include <map>
#include <string>

namespace gattn::autograd::profile {

struct OpTimes {
  double forward_s = 0, backward_s = 0;
  std::int64_t forward_calls = 0, backward_calls = 0;
};

bool enabled();
// Starts (clearing what was collected) or stops collecting.
void enable(bool on);

// The hook for record(): a no-op while disabled.
void forward_recorded(const char* op);

// Times a span of the backward pass (a node's backward function, a gradient sum) as backward time
// of `name`, which must outlive the timer. Nothing is read or charged while disabled.
class BackwardTimer {
 public:
  explicit BackwardTimer(const char* name);
  ~BackwardTimer();
  BackwardTimer(const BackwardTimer&) = delete;
  BackwardTimer& operator=(const BackwardTimer&) = delete;

 private:
  const char* name_;
  std::int64_t start_ns_;
};

// Times a named span that is not an op ("optimizer step"): charged as forward time of that name,
// and the next op's interval starts where the span ends.
class Section {
 public:
  explicit Section(const char* name);
  ~Section();
  Section(const Section&) = delete;
  Section& operator=(const Section&) = delete;

 private:
  const char* name_;
  std::int64_t start_ns_;
};

// What was collected, by op name.
std::map<std::string, OpTimes> snapshot();

}  // namespace gattn::autograd::profile
