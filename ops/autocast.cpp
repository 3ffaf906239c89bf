#include "ops/autocast.h"

namespace gattn::ops {

namespace {
thread_local ComputePrecision current = ComputePrecision::fp32;
}

ComputePrecision autocast_precision() { return current; }

AutocastScope::AutocastScope(ComputePrecision p) : saved_(current) { current = p; }
AutocastScope::~AutocastScope() { current = saved_; }

}  // namespace gattn::ops
