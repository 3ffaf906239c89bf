// Broadcast shape and stride computation.
#include "ops/broadcast.h"

#include <algorithm>

namespace gattn::ops {

Shape broadcast_shape(const Shape& a, const Shape& b, const char* op) {
  std::size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    std::int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      throw ShapeError(std::string(op) + ": shapes " + shape_str(a) + " and " + shape_str(b) + " cannot be broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<std::int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::size_t n = out.size(), pad = n - in.size();
  std::vector<std::int64_t> strides(n, 0);
  std::int64_t s = 1;
  for (std::size_t i = n; i-- > pad;) {
    std::int64_t d = in[i - pad];
    strides[i] = (d == 1 && out[i] != 1) ? 0 : s;
    s *= d;
  }
  return strides;
}

BroadcastPlan make_broadcast_plan(const Shape& a, const Shape& b, const Shape& out) {
  std::vector<std::int64_t> sa = broadcast_strides(a, out), sb = broadcast_strides(b, out);
  BroadcastPlan p;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i] == 1) continue;  // size-1 dims contribute nothing to the loop
    if (!p.shape.empty()) {
      // Merge with the previous dim when each operand is either contiguous across both or
      // broadcast along both.
      std::int64_t& prev = p.shape.back();
      bool a_ok = (p.sa.back() == sa[i] * out[i]) || (p.sa.back() == 0 && sa[i] == 0);
      bool b_ok = (p.sb.back() == sb[i] * out[i]) || (p.sb.back() == 0 && sb[i] == 0);
      if (a_ok && b_ok) {
        prev *= out[i];
        p.sa.back() = sa[i];
        p.sb.back() = sb[i];
        continue;
      }
    }
    p.shape.push_back(out[i]);
    p.sa.push_back(sa[i]);
    p.sb.push_back(sb[i]);
  }
  if (p.shape.empty()) {
    p.shape = {1};
    p.sa = {1};
    p.sb = {1};
  }
  for (auto d : p.shape) p.numel *= d;
  if (shape_numel(out) == 0) p.numel = 0;
  return p;
}

}  // namespace gattn::ops
