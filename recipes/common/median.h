// The median of timed repeats, which the benchmarks report (robust to a repeat that an OpenMP
// wake-up or another process slowed).
#pragma once
#include <algorithm>
#include <vector>

namespace gattn::recipes {

// The middle value, or the mean of the two middle ones for an even count; 0 for none.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace gattn::recipes
